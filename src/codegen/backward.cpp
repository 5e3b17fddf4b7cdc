#include "codegen/backward.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "codegen/family_parts.hpp"  // family_sources
#include "common/resources.cuh"  // kernels/common, shared with the device code

namespace attn {

namespace {

// fp32 accumulator registers a thread holds: dK/dV kernel, dK (rows x DK) and dV (rows x DVK, V's
// head dim), dP^T (rows x block_m) and P^T packed in the element type (half as many), and with
// softcap P^T (1 - tanh^2) packed too and tanh's temporaries (counted as 2 block_m: at D 64 / dv 128
// the 64-query steps spill 36 bytes with softcap, 0 without); dQ kernel, dQ (rows x DK) and S and
// dP (rows x block_n).
int dkdv_registers(const backward_config& c, const problem& s) {
  const int rows = c.kv_block_n / c.kv_warps, dk = attn_k::mma_head_dim(static_cast<int>(s.head_dim)),
            dvk = attn_k::mma_head_dim(static_cast<int>(value_dim(s)));
  const int sums = c.split_dkdv ? 2 * std::max(dk, dvk) : 2 * (dk + dvk);  // split: dK or dV, not both
  return rows * (sums + (has_softcap(s) ? 5 : 3) * c.kv_block_m) / 64;
}
int dq_registers(const backward_config& c, int64_t d) {
  const int rows = c.q_block_m / c.q_warps, dk = attn_k::mma_head_dim(static_cast<int>(d));
  return rows * (dk + 2 * c.q_block_n) / 32;
}
// Past these ptxas spills (sm_90a, tests/cpu/test_backward_compile.cpp): the dK/dV kernel at 176
// (D 128, 16 keys a warp, 64 queries a step: 40 bytes when not causal; 192 before P^T was packed
// early spilled at both), the dQ kernel at 176 (D 96, 16 rows a warp, 128 keys a step: 44 bytes).
constexpr int max_dkdv_accumulator_registers = 168, max_dq_accumulator_registers = 160;
// The wgmma kernels' (sm_90a, tests/cpu/test_backward_compile.cpp): to be set where ptxas spills.
constexpr int64_t max_wgmma_dkdv_registers = 192, max_wgmma_dq_registers = 224;

}  // namespace

std::vector<backward_config> backward_default_configs(const problem& s) {
  // dK and dV in two launches; the dQ kernel's steps narrower (above D 128, or V's head dim above 128)
  const bool wide = std::max(s.head_dim, value_dim(s)) > 128;
  std::vector<backward_config> out;
  const int kv_tiles[][3] = {{32, 64, 4}, {64, 64, 4}, {32, 128, 8}, {64, 128, 8}};  // block_m, block_n, warps
  const std::vector<std::array<int, 3>> q_tiles =
      wide ? std::vector<std::array<int, 3>>{{64, 32, 4}, {128, 32, 8}}
           : std::vector<std::array<int, 3>>{{64, 64, 4}, {64, 128, 4}, {128, 64, 8}};
  for (const auto& kv : kv_tiles)
    for (const auto& q : q_tiles)
      for (const int q_stages : wide ? std::vector<int>{1, 2} : std::vector<int>{2})
        out.push_back({kv[0], kv[1], kv[2], 2, q[0], q[1], q[2], q_stages, false, wide});
  for (const int kv_m : {32, 64})
    for (const int kv_n : {64, 128})
      for (const int q_m : {64, 128})
        for (const int q_n : wide ? std::vector<int>{64} : std::vector<int>{64, 128})
          out.push_back({kv_m, kv_n, kv_n / 16, 2, q_m, q_n, q_m / 16, 2, true, wide});
  if (!wide)
    for (const int kv_n : {64, 128}) out.push_back({64, kv_n, kv_n / 16, 2, 0, 0, 0, 0, true, false, true});
  return out;
}

int64_t backward_dkdv_shared_bytes(const backward_config& c, const problem& s) {
  if (c.wgmma)
    return attn_k::wg_bwd_dkdv_shared_bytes(c.kv_block_m, c.kv_block_n, c.kv_stages, static_cast<int>(s.head_dim),
                                            c.atomic_dq, static_cast<int>(value_dim(s)), warp_specialized(c));
  return attn_k::bwd_dkdv_shared_bytes(c.kv_block_m, c.kv_block_n, c.kv_stages, static_cast<int>(s.head_dim),
                                       element_size(s.dtype), static_cast<int>(value_dim(s)));
}
int64_t backward_dq_shared_bytes(const backward_config& c, const problem& s) {
  if (c.atomic_dq) return 0;  // its last kernel converts dQ, without shared memory
  if (c.wgmma)
    return attn_k::wg_bwd_dq_shared_bytes(c.q_block_m, c.q_block_n, c.q_stages, static_cast<int>(s.head_dim),
                                          static_cast<int>(value_dim(s)));
  return attn_k::bwd_dq_shared_bytes(c.q_block_m, c.q_block_n, c.q_stages, static_cast<int>(s.head_dim),
                                     element_size(s.dtype), static_cast<int>(value_dim(s)));
}

namespace {

// The wgmma kernels' own rules: sm_90a, head dims multiples of 16, 64 rows of the split side per
// warpgroup, and their registers (per thread: dK and dV (D + dv) / 2 (split: the wider / 2), the
// step's S^T/dP^T and packed P^T and dS^T block_m; dQ D / 2, S, dP and dS 1.25 block_n).
std::optional<std::string> wgmma_reject(const backward_config& c, const problem& s, const resource_limits& limits) {
  if (limits.cc_major != 9 || limits.cc_minor != 0)
    return std::string("the wgmma backward runs on sm_90a only (Hopper's warpgroup MMA)");
  if (s.head_dim % 16 != 0) return fmt::format("head dim {}: the wgmma backward takes multiples of 16", s.head_dim);
  const int64_t dv = value_dim(s);
  if (dv % 16 != 0) return fmt::format("dv {}: the wgmma backward takes V's head dims in multiples of 16", dv);
  if (has_value_dim(s)) {
    // Tiles of d and dv columns side by side: each must be whole 1024-byte swizzle periods.
    for (const auto& [rows, what] : {std::pair{c.kv_block_m, "dK/dV step"}, {c.kv_block_n, "dK/dV block"},
                                     {c.q_block_m, "dQ block"}, {c.q_block_n, "dQ step"}})
      if (rows > 0 && (rows * s.head_dim * 2 % 1024 != 0 || rows * dv * 2 % 1024 != 0))
        return fmt::format("dv {} != head dim {}: a {} of {} rows is not whole 1024-byte tiles at both widths", dv,
                           s.head_dim, what, rows);
  }
  const bool ws = warp_specialized(c);
  if (ws && c.kv_block_n != 128)
    return fmt::format("warp-specialized dK/dV kernel: {} keys; it takes 128 (two computing warpgroups beside the "
                       "producer, {} warps)", c.kv_block_n, c.kv_warps);
  if (c.kv_warps % 4 != 0 || (c.kv_block_n != 16 * c.kv_warps && !ws))
    return fmt::format("dK/dV kernel: {} keys over {} warps: the wgmma backward gives each warpgroup 64 keys "
                       "(and, with atomic dQ, takes a producer warpgroup beside them: {} warps)",
                       c.kv_block_n, c.kv_warps, c.kv_block_n / 16 + 4);
  if (c.q_warps % 4 != 0 || c.q_block_m != 16 * c.q_warps)
    return fmt::format("dQ kernel: {} rows over {} warps: the wgmma backward gives each warpgroup 64 rows",
                       c.q_block_m, c.q_warps);
  if (c.kv_block_m > 256 || c.q_block_n > 256) return std::string("wgmma's N is at most 256");
  if (c.atomic_dq) {
    const int64_t groups = c.kv_block_n / 64, columns = s.head_dim / groups, both = (s.head_dim + dv) / 2;
    if (c.kv_block_m != 64 || c.split_dkdv)
      return fmt::format("atomic dQ: 64 queries a step and dK and dV in one launch (this tile: {} queries{})",
                         c.kv_block_m, c.split_dkdv ? ", split" : "");
    if (groups > 1 && columns % 64 != 0)
      return fmt::format("atomic dQ: head dim {} over {} warpgroups is {} columns each, not whole 64-column pieces",
                         s.head_dim, groups, columns);
    if (const int64_t r = both + columns / 2; r > max_wgmma_dkdv_registers)
      return fmt::format("atomic dQ: dK, dV and the dQ product exceed the register budget: {} float registers per "
                         "thread > {}", r, max_wgmma_dkdv_registers);
  }
  // Softcap: dS^T's factor P^T (1 - tanh^2) is packed beside P^T, block_m / 4 registers more where
  // one launch computes dK and dV (at D 128 the 64-query steps spill 16 bytes with it); the atomic
  // variants compile without spills with it (tests/cpu/test_backward_compile.cpp).
  const int64_t softcap = has_softcap(s) && !c.split_dkdv && !c.atomic_dq ? c.kv_block_m / 4 : 0;
  const int64_t sums = c.split_dkdv ? std::max(s.head_dim, dv) / 2 : (s.head_dim + dv) / 2;  // dK and dV
  if (const int64_t r = sums + c.kv_block_m + softcap; r > max_wgmma_dkdv_registers)
    return fmt::format("dK/dV accumulators exceed the register budget: {} float registers per thread > {}", r,
                       max_wgmma_dkdv_registers);
  if (const int64_t r = s.head_dim / 2 + c.q_block_n * 5 / 4; r > max_wgmma_dq_registers)
    return fmt::format("dQ accumulators exceed the register budget: {} float registers per thread > {}", r,
                       max_wgmma_dq_registers);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> backward_reject(const backward_config& c, const problem& s, const resource_limits& limits) {
  problem as_backward = s;  // what the backward takes, whatever pass s names (core/problem's rule)
  as_backward.pass = attention_pass::bwd;
  if (auto why = backward_refusal(as_backward)) return why;
  if (limits.cc_major < 8) return std::string("mma.sync bf16/fp16 m16n8k16 needs sm_80 or newer");
  if (c.atomic_dq && !c.wgmma) return std::string("atomic dQ is the wgmma backward's (fa2's dQ has its own kernel)");
  // ptxas spills the one-stage dQ kernel of a packed batch above 128 (28 bytes at d 192 / dv 128,
  // 255 registers against 216 not packed: the sequence's lengths are registers, not parameters).
  if (is_varlen(s) && std::max(s.head_dim, value_dim(s)) > 128 && !c.atomic_dq && c.q_stages == 1)
    return std::string("a packed batch above head dim 128: one-stage dQ kernels spill (two stages do not)");
  if (c.wgmma)
    if (auto why = wgmma_reject(c, s, limits)) return why;
  struct kernel_tile {
    const char* what;
    int block_m, block_n, warps, stages, split;  // split: the tile side the warps share
  };
  // A warp-specialized dK/dV kernel's producer warpgroup takes no share of the keys.
  const int kv_computing = warp_specialized(c) ? c.kv_warps - 4 : c.kv_warps;
  const kernel_tile tiles[] = {{"dK/dV", c.kv_block_m, c.kv_block_n, kv_computing, c.kv_stages, c.kv_block_n},
                               {"dQ", c.q_block_m, c.q_block_n, c.q_warps, c.q_stages, c.q_block_m}};
  for (const kernel_tile& k : tiles) {
    if (c.atomic_dq && &k != &tiles[0]) continue;  // no dQ kernel
    if (k.block_m <= 0 || k.block_n <= 0 || k.block_m % 16 != 0 || k.block_n % 16 != 0)
      return fmt::format("{} tile {}x{}: both sides multiples of 16", k.what, k.block_m, k.block_n);
    if (k.warps <= 0 || k.split % (16 * k.warps) != 0)
      return fmt::format("{} tile: {} rows do not split into {} warps of whole 16-row mma tiles", k.what, k.split,
                         k.warps);
    if (k.warps * 32 > limits.max_threads_per_block)
      return fmt::format("{} kernel: {} threads exceed the device's {} per block", k.what, k.warps * 32,
                         limits.max_threads_per_block);
    if (k.stages < 1 || k.stages > 4) return fmt::format("{} kernel: stages {} not in [1, 4]", k.what, k.stages);
  }
  if (c.wgmma) {
    // the wgmma kernels' registers were checked by wgmma_reject
  } else if (const int r = dkdv_registers(c, s); r > max_dkdv_accumulator_registers)
    return fmt::format("dK/dV accumulators exceed the register budget: {} float registers per thread > {}", r,
                       max_dkdv_accumulator_registers);
  if (c.wgmma) {
  } else if (const int r = dq_registers(c, s.head_dim); r > max_dq_accumulator_registers)
    return fmt::format("dQ accumulators exceed the register budget: {} float registers per thread > {}", r,
                       max_dq_accumulator_registers);
  for (const auto& [what, bytes] : {std::pair{"dK/dV", backward_dkdv_shared_bytes(c, s)},
                                    std::pair{"dQ", backward_dq_shared_bytes(c, s)}})
    if (bytes > limits.shared_memory_per_block)
      return fmt::format("{} kernel: shared memory {} KiB exceeds the device's {} KiB per block", what,
                         (bytes + 1023) / 1024, limits.shared_memory_per_block / 1024);
  if (s.batch > 65535 || s.heads > 65535) return fmt::format("batch {} or heads {} exceed the grid's 65535", s.batch, s.heads);
  return std::nullopt;
}

namespace {

// The delta kernel's template arguments after D (ZERO_DQ, then DV and VARLEN), as far as they differ
// from bwd_delta's defaults.
std::string delta_tail(bool zero_dq, const problem& s) {
  if (has_value_dim(s) || is_varlen(s))
    return fmt::format(", {}, {}{}", zero_dq, has_value_dim(s) ? value_dim(s) : 0, is_varlen(s) ? ", true" : "");
  return zero_dq ? ", true" : "";
}

}  // namespace

std::string backward_instantiation(const backward_config& c, const problem& s) {
  const bool bf16 = s.dtype == dtype::bf16;
  const bool packed = is_varlen(s);
  // wg_bwd_config's last arguments after SOFTCAP: VARLEN where the batch is packed, then DV where
  // V's head dim is its own (after VARLEN, named either way).
  const std::string wg_tail = has_value_dim(s) ? fmt::format(", {}, {}", packed, value_dim(s))
                              : packed         ? std::string(", true")
                                               : std::string();
  if (c.atomic_dq)  // delta zeroes the fp32 dQ sum, dK/dV adds to it, the last kernel converts it
    return fmt::format(
        "#include \"wgmma_bwd.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__({dt}) {delta}(const attn_k::bwd_params p) {{\n"
        "  attn_k::bwd_delta<{bf16}, {d}{delta_tail}>(p);\n}}\n"
        "extern \"C\" __global__ void __launch_bounds__({kt}, 1) {dkdv}(const attn_k::bwd_params p) {{\n"
        "  attn_k::wg_bwd_dkdv<attn_k::wg_bwd_config<{bf16}, {d}, {km}, {kn}, {kw}, {ks}, {causal}, 0, true, {window}, {softcap}{wg_tail}>>(p);\n}}\n"
        "extern \"C\" __global__ void __launch_bounds__({dt}) {dq}(const attn_k::bwd_params p) {{\n"
        "  attn_k::bwd_dq_convert<{bf16}, {d}{packed}>(p);\n}}\n",
        fmt::arg("delta_tail", delta_tail(true, s)), fmt::arg("packed", packed ? ", true" : ""),
        fmt::arg("wg_tail", wg_tail),
        fmt::arg("dt", backward_delta_threads), fmt::arg("delta", backward_delta_symbol),
        fmt::arg("dkdv", backward_dkdv_symbol), fmt::arg("dq", backward_dq_symbol), fmt::arg("bf16", bf16),
        fmt::arg("d", s.head_dim), fmt::arg("causal", s.causal), fmt::arg("kt", c.kv_warps * 32),
        fmt::arg("km", c.kv_block_m), fmt::arg("kn", c.kv_block_n), fmt::arg("kw", c.kv_warps),
        fmt::arg("ks", c.kv_stages), fmt::arg("window", has_window(s)), fmt::arg("softcap", has_softcap(s)));
  // The config's last arguments: PART, then (wgmma) ATOMIC_DQ, then WINDOW and SOFTCAP, then (fa2)
  // DV where V's head dim is its own or the batch packed, then VARLEN where it is packed; (wgmma)
  // wg_tail.
  const std::string dv = packed             ? fmt::format(", {}, true", has_value_dim(s) ? value_dim(s) : 0)
                         : has_value_dim(s) ? fmt::format(", {}", value_dim(s))
                                            : "";
  const std::string tail = fmt::format("{}{}, {}{}", c.wgmma ? "false, " : "", has_window(s), has_softcap(s),
                                       c.wgmma ? wg_tail : dv);
  return fmt::format(
      "#include \"{header}\"\n"
      "extern \"C\" __global__ void __launch_bounds__({dt}) {delta}(const attn_k::bwd_params p) {{\n"
      "  attn_k::bwd_delta<{bf16}, {d}{delta_tail}>(p);\n}}\n"
      "extern \"C\" __global__ void __launch_bounds__({kt}, 1) {dkdv}(const attn_k::bwd_params p) {{\n"
      "  attn_k::{dkdv_fn}<attn_k::{config}<{bf16}, {d}, {km}, {kn}, {kw}, {ks}, {causal}, {part}, {tail}>>(p);\n}}\n"
      "extern \"C\" __global__ void __launch_bounds__({qt}, 1) {dq}(const attn_k::bwd_params p) {{\n"
      "  attn_k::{dq_fn}<attn_k::{config}<{bf16}, {d}, {qm}, {qn}, {qw}, {qs}, {causal}, 0, {tail}>>(p);\n}}\n"
      "{dk_entry}",
      fmt::arg("part", c.split_dkdv ? 1 : 0), fmt::arg("tail", tail),
      fmt::arg("delta_tail", delta_tail(false, s)),
      fmt::arg("dk_entry",
               c.split_dkdv ? fmt::format("extern \"C\" __global__ void __launch_bounds__({}, 1) {}(const attn_k::bwd_params p) {{\n"
                                          "  attn_k::{}<attn_k::{}<{}, {}, {}, {}, {}, {}, {}, 2, {}>>(p);\n}}\n",
                                          c.kv_warps * 32, backward_dk_symbol, c.wgmma ? "wg_bwd_dkdv" : "bwd_dkdv",
                                          c.wgmma ? "wg_bwd_config" : "bwd_config", bf16, s.head_dim, c.kv_block_m,
                                          c.kv_block_n, c.kv_warps, c.kv_stages, s.causal, tail)
                            : std::string()),
      fmt::arg("header", c.wgmma ? "wgmma_bwd.cuh" : "fa2_bwd.cuh"),
      fmt::arg("config", c.wgmma ? "wg_bwd_config" : "bwd_config"),
      fmt::arg("dkdv_fn", c.wgmma ? "wg_bwd_dkdv" : "bwd_dkdv"), fmt::arg("dq_fn", c.wgmma ? "wg_bwd_dq" : "bwd_dq"),
      fmt::arg("dt", backward_delta_threads), fmt::arg("delta", backward_delta_symbol),
      fmt::arg("dkdv", backward_dkdv_symbol), fmt::arg("dq", backward_dq_symbol), fmt::arg("bf16", bf16),
      fmt::arg("d", s.head_dim), fmt::arg("causal", s.causal), fmt::arg("kt", c.kv_warps * 32),
      fmt::arg("km", c.kv_block_m), fmt::arg("kn", c.kv_block_n), fmt::arg("kw", c.kv_warps),
      fmt::arg("ks", c.kv_stages), fmt::arg("qt", c.q_warps * 32), fmt::arg("qm", c.q_block_m),
      fmt::arg("qn", c.q_block_n), fmt::arg("qw", c.q_warps), fmt::arg("qs", c.q_stages));
}

std::vector<std::string> backward_compile_options() { return {"--use_fast_math"}; }

const char* backward_family(const backward_config& c) { return c.wgmma ? "wgmma" : "fa2"; }

bool has_backward_kernels(const std::string& family) { return family == "fa2" || family == "wgmma"; }

std::vector<std::string> backward_sources(const backward_config& c) {
  return family_sources({c.wgmma ? "wgmma_bwd.cuh" : "fa2_bwd.cuh", "reference.cuh"});
}

std::vector<variant> build_backward_variants(const problem& shape, const std::vector<backward_config>& configs,
                                             const device_desc& device, const resource_limits& limits,
                                             const compile_cache& cache, int jobs, const compile_progress& progress,
                                             const compiled_variant& compiled) {
  problem s = shape;
  s.pass = attention_pass::bwd;
  if (auto why = backward_refusal(s)) throw invalid_input(*why);
  std::vector<variant> out;
  std::vector<size_t> to_compile;
  std::vector<std::string> sources;
  for (const backward_config& c : configs) {
    variant v;
    v.rec.device = device;
    v.rec.shape = s;
    v.rec.family = backward_family(c);
    set_backward_config(v.rec, c);
    v.rec.kernel_hash = fmt::format("{:016x}", cache.kernels().hash_of(backward_sources(c)));
    v.rec.shared_memory_bytes = std::max(backward_dkdv_shared_bytes(c, s), backward_dq_shared_bytes(c, s));
    v.rec.materialized_bytes = materialized_extra_bytes(s);
    const auto why = backward_reject(c, s, limits);
    if (why) {
      v.rec.status = status::pruned;
      v.rec.message = *why;
    } else {
      to_compile.push_back(out.size());
    }
    sources.push_back(why ? std::string() : backward_instantiation(c, s));
    out.push_back(std::move(v));
  }
  if (to_compile.empty())
    throw invalid_input(fmt::format("no backward variant can run {}:\n{}", describe(s), pruning_summary(out)));
  compile_variants(out, to_compile, sources, {device.arch, backward_compile_options(), backend::cuda}, cache, jobs,
                   progress, compiled);
  return out;
}

std::vector<backward_launch> backward_launches(const backward_config& c, const problem& s) {
  // The delta kernel's rows: [B, H, Nq], or a packed batch's [H, total_q] (q_rows).
  const int64_t rows = q_rows(s) * s.heads, per_block = backward_delta_threads / 32;
  const auto blocks = [](int64_t n, int64_t per) { return static_cast<unsigned>((n + per - 1) / per); };
  const backward_launch dkdv{backward_dkdv_symbol,
                             {blocks(s.kv_len, c.kv_block_n), static_cast<unsigned>(s.kv_heads),
                              static_cast<unsigned>(s.batch)},
                             {static_cast<unsigned>(c.kv_warps * 32)},
                             static_cast<int>(backward_dkdv_shared_bytes(c, s))};
  std::vector<backward_launch> out{{backward_delta_symbol, {blocks(rows, per_block)}, {backward_delta_threads}, 0}, dkdv};
  if (c.split_dkdv) {
    out.push_back(dkdv);
    out.back().symbol = backward_dk_symbol;
  }
  if (c.atomic_dq) {  // dQ from the fp32 sum: a warp a row, as the delta kernel
    out.push_back({backward_dq_symbol, {blocks(rows, per_block)}, {backward_delta_threads}, 0});
    return out;
  }
  out.push_back({backward_dq_symbol,
                 {blocks(s.q_len, c.q_block_m), static_cast<unsigned>(s.heads), static_cast<unsigned>(s.batch)},
                 {static_cast<unsigned>(c.q_warps * 32)},
                 static_cast<int>(backward_dq_shared_bytes(c, s))});
  return out;
}

loaded_backward load_backward(const device_runtime& rt, const std::string& cubin, const backward_config& c,
                              const problem& s, int device) {
  loaded_backward b{loaded_module(rt, cubin), {}, backward_launches(c, s), c.atomic_dq};
  for (size_t i = 0; i < b.launches.size(); ++i) {
    b.kernels.push_back(b.module.kernel(b.launches[i].symbol));
    if (b.launches[i].shared_bytes > 0) rt.set_dynamic_shared_memory(b.kernels[i], b.launches[i].shared_bytes, device);
  }
  return b;
}

void run_backward(const device_runtime& rt, const loaded_backward& b, const attn_k::bwd_params& p, stream_t stream) {
  run_backward(rt, b, b.launches, p, stream);
}

void run_backward(const device_runtime& rt, const loaded_backward& b, const std::vector<backward_launch>& launches,
                  const attn_k::bwd_params& p, stream_t stream) {
  if (launches.size() != b.kernels.size())
    throw std::logic_error("run_backward: launches of another variant than the kernels loaded");
  if (b.atomic_dq && !p.dq_accum)
    throw invalid_input("an atomic-dQ backward variant needs its fp32 dQ workspace (backward_tensors' dq_accum, "
                        "dq_accum_bytes() of the problem), and none was given");
  attn_k::bwd_params copy = p;
  void* args[] = {&copy};
  for (size_t i = 0; i < launches.size(); ++i)
    rt.launch(b.kernels[i], launches[i].grid, launches[i].block, launches[i].shared_bytes, stream, args);
}

}  // namespace attn
