#include <algorithm>
#include <climits>
#include <iterator>

#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"
#include "codegen/kernel_args.hpp"
#include "codegen/launch_plan.hpp"
#include "common/resources.cuh"  // kernels/common, shared with the device code

namespace attn {

namespace {

// Mirrors fa2_config in kernels/fa2.cuh.
// loader 1 (bulk copies) adds one 8-byte mbarrier per stage after the tiles.
int64_t fa2_shared_memory(const tile_config& c, const problem& s) {
  return padded_tiles_bytes(c, s) + (c.knob == 1 ? 8 * c.stages : 0);
}

int fa2_threads(const tile_config& c) { return c.warps * 32; }

// fp32 registers per thread for O (rows x D) and S (rows x BLOCK_N) of a warp's rows. Past this
// the kernel spills in its inner loop (seen: 192 -> 255 registers + spills at D=128, 128x64x4).
// With dv != d the count is of the wider of D and dv (the Q K^T loop's fragments take what a narrower
// O saves) against a lower budget: at 192 (128x64x4) dense D=128 compiled to 253 registers without
// spills, but d 64 / dv 128 and d 192 / dv 128 spilled 544 bytes (sm_90a).
constexpr int max_accumulator_registers = 224, max_value_dim_accumulator_registers = 176;
int fa2_accumulator_registers(const tile_config& c, const problem& s) {
  const int warp_rows = c.block_m / c.warps;
  const int64_t width = has_value_dim(s) ? std::max(s.head_dim, value_dim(s)) : value_dim(s);
  return warp_rows * (attn_k::mma_head_dim(static_cast<int>(width)) + c.block_n) / 32;
}

// Split-KV's row blocks: with the merge in the kernel (splits up to FUSED_MERGE_SPLITS) each has a
// counter at the start of the workspace (kernels/fa2.cuh's merge_splits).
int64_t fa2_row_blocks(const tile_config& c, const problem& s) {
  return (decode_rows(s, c.pack_gqa) + c.block_m - 1) / c.block_m * decode_heads(s, c.pack_gqa) * s.batch;
}

std::optional<std::string> fa2_reject(const tile_config& c, const problem& s,
                                      const resource_limits& limits) {
  if (auto why = tiling_reason(c, "warps", "mma")) return why;
  const int budget = has_value_dim(s) ? max_value_dim_accumulator_registers : max_accumulator_registers;
  if (const int regs = fa2_accumulator_registers(c, s); regs > budget)
    return fmt::format("accumulators exceed the register budget: {} float registers per thread > {}{}", regs, budget,
                       has_value_dim(s) ? " (dv != d)" : "");
  if (c.stages < 1 || c.stages > 8) return fmt::format("stages {} not in [1, 8]", c.stages);
  if (fa2_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per block", fa2_threads(c),
                       limits.max_threads_per_block);
  const int64_t bytes = fa2_shared_memory(c, s);
  if (bytes > limits.shared_memory_per_block)
    return fmt::format("shared memory {} KiB exceeds the device's {} KiB per block",
                       (bytes + 1023) / 1024, limits.shared_memory_per_block / 1024);
  if (limits.cc_major < 8) return std::string("mma.sync bf16/fp16 m16n8k16 needs sm_80 or newer");
  if (c.knob < 0 || c.knob > 1) return fmt::format("loader {} is not 0 (cp.async) or 1 (bulk copies)", c.knob);
  if (c.knob == 1 && limits.cc_major < 9) return std::string("loader 1 (cp.async.bulk) needs sm_90 or newer");
  if (c.knob == 1 && c.stages < 2) return std::string("loader 1 needs a ring of 2 stages or more");
  if (c.knob == 1 && s.head_dim % 16 != 0)
    return fmt::format("loader 1 copies whole rows: head dim {} is not a multiple of 16 (loader 0 zero-fills the rest)",
                       s.head_dim);
  if (c.knob == 1 && value_dim(s) % 16 != 0)
    return fmt::format("loader 1 copies whole rows: dv {} is not a multiple of 16 (loader 0 zero-fills the rest)",
                       value_dim(s));
  if (c.splits < 1) return fmt::format("splits {} is not positive", c.splits);
  if (c.pack_gqa != 0 && c.pack_gqa != 1) return fmt::format("pack_gqa {} is not 0 or 1", c.pack_gqa);
  if (c.pack_gqa && s.kv_heads == s.heads)
    return std::string("pack_gqa 1 needs fewer K/V heads than query heads (GQA/MQA)");
  if (s.batch > 65535)  // blockIdx.z is the batch entry (a packed batch's sequence)
    return fmt::format("batch {} exceeds the grid's 65535 blocks in z", s.batch);
  if (c.splits > 1 && c.splits <= attn_k::FUSED_MERGE_SPLITS && fa2_row_blocks(c, s) > attn_k::SPLIT_COUNTERS)
    return fmt::format("split-KV over {} row blocks: at most {} (a counter each, in the workspace)",
                       fa2_row_blocks(c, s), attn_k::SPLIT_COUNTERS);
  if (is_varlen(s) && (c.splits > 1 || c.pack_gqa))
    return fmt::format("a packed batch (seqlens) has no {} (each sequence's rows are a block's)",
                       c.splits > 1 ? "split-KV" : "packed GQA");
  return std::nullopt;
}

std::string fa2_instantiation(const tile_config& c, const problem& s) {
  const bool split = c.splits > 1, pack = c.pack_gqa != 0, bulk = c.knob == 1;
  const bool lens = has_kv_lens(s), paged = s.page_size > 0;
  const bool window = has_window(s), softcap = has_softcap(s);
  // The split count is a launch parameter: every split count > 1 shares one binary.
  // A decode variant's bounds say one block per SM at least: without it ptxas held one-warp
  // blocks to 168 registers and spilled (D=64, 128-key tiles, split).
  const bool decode = split || pack || bulk || lens || paged;
  // The template's flags after CAUSAL, as far as one is set (a dense instantiation names none, so
  // its source and binary stay those measured before the flags existed).
  const bool flags[] = {pack, split, bulk, lens, paged, window, softcap};
  size_t named = 0;
  for (size_t i = 0; i < std::size(flags); ++i)
    if (flags[i]) named = i + 1;
  if (decode) named = std::max<size_t>(named, lens || paged ? 5 : 3);  // the decode variants' names, as before
  std::string extra;
  for (size_t i = 0; i < named; ++i) extra += fmt::format("{}{}", i ? ", " : "", flags[i]);
  const bool varlen = is_varlen(s);
  if (has_value_dim(s) || varlen) {  // DV, then VARLEN, the last parameters: every flag before them named
    for (size_t i = named; i < std::size(flags); ++i) extra += fmt::format("{}{}", i ? ", " : "", flags[i]);
    extra += fmt::format(", {}", has_value_dim(s) ? value_dim(s) : 0);
    if (varlen) extra += ", true";
  }
  std::string text = instantiation_stub("fa2.cuh", "attn_fa2", "fa2_forward", "fa2_config", fa2_threads(c), c, s,
                                        decode ? 1 : 0, "", extra);
  if (split)  // the combine kernel of split counts above FUSED_MERGE_SPLITS (one binary serves every count)
    text += combine_stub("attn_fa2_combine", "const attn_k::fwd_params p", "p", s, has_value_dim(s));
  return text;
}

// The grid over packed or per-head rows times the splits, and split-KV's workspace (its counters, then
// the partial O and LSE) and merge: up to FUSED_MERGE_SPLITS splits the last split of each row block
// merges them in the kernel; above, the combine kernel runs after it.
void fa2_plan(launch_plan& plan, const tile_config& c, const problem& s, const attn_k::fwd_params& params,
              const gpu_info&) {
  attn_k::fwd_params p = params;
  const int64_t rows = decode_rows(s, c.pack_gqa);
  const int64_t blocks_x = (rows + c.block_m - 1) / c.block_m * c.splits;
  if (blocks_x > INT_MAX) throw invalid_input(fmt::format("{} row blocks exceed the grid's limit", blocks_x));
  plan.grid = {static_cast<unsigned>(blocks_x), static_cast<unsigned>(decode_heads(s, c.pack_gqa)),
               static_cast<unsigned>(s.batch)};
  p.num_splits = c.splits;
  if (c.splits > 1) {
    point_split_workspace(p, s, c.splits);
    if (c.splits <= attn_k::FUSED_MERGE_SPLITS) {
      if (const int64_t blocks = fa2_row_blocks(c, s); blocks > attn_k::SPLIT_COUNTERS)
        throw invalid_input(fmt::format("split-KV over {} row blocks: at most {} (one counter each)", blocks,
                                        attn_k::SPLIT_COUNTERS));
      plan.combine = nullptr;
    } else {
      plan_combine(plan, s);
    }
  } else {
    plan.combine = nullptr;
  }
  plan.set_argument(p);
}

// The family's own axis, `loader`: 0 every thread issues 16-byte cp.async, 1 (sm_90) warp 0 issues a
// bulk copy per K/V row. The default is 0: on the H200 the bulk loader won none of four decode
// shapes it was searched on (kernels/NOTES.md D1); --space loader=0,1 searches both.
search_space fa2_space() {
  search_space space = default_space();
  space.knob_name = "loader";
  space.decode_axes = true;
  space.splits.clear();  // chosen per problem (for_problem)
  space.pack_gqa.clear();
  // Decode-sized problems: one warp per 16 rows (no warp spills), 16 to 64 rows a block.
  space.decode = {{16, 32, 64}, {64, 128}, {1, 2, 4}, {2, 3, 4}, {}, 16};
  return space;
}

}  // namespace

const kernel_family& fa2_family() {
  static const kernel_family family{
      "fa2",           backend::cuda,     "attn_fa2",
      8,               fa2_space(),       fa2_shared_memory,
      fa2_threads,     fa2_reject,        fa2_instantiation,
      {"--use_fast_math"},
      family_sources({"fa2.cuh", "reference.cuh"}),
      false,
      fa2_plan,
      false,
      "attn_fa2_combine",
      true,
      true,
      1,
      true,
      true};  // a packed batch
  return family;
}

}  // namespace attn
