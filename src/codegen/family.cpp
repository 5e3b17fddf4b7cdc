#include <climits>

#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"
#include "codegen/kernel_args.hpp"
#include "codegen/kernel_sources.hpp"
#include "codegen/launch_plan.hpp"
#include "common/params.cuh"     // kernels/common, shared with the device code
#include "common/resources.cuh"  // kernels/common, shared with the device code

namespace attn {

void point_split_workspace(attn_k::fwd_params& p, const problem& s, int splits) {
  const int64_t need = split_workspace_floats(s, splits);
  if (p.o_partial == nullptr || p.workspace_floats < need)
    throw invalid_input(fmt::format("split-KV over {} splits needs a workspace of {} bytes; {} were given", splits,
                                    need * 4, p.o_partial ? p.workspace_floats * 4 : 0));
  p.o_partial += attn_k::SPLIT_COUNTERS;  // the counters come first
  p.lse_partial = p.o_partial + splits * s.batch * s.heads * s.q_len * value_dim(s);
}

void plan_combine(launch_plan& plan, const problem& s) {
  if (plan.combine == nullptr) throw invalid_input("the variant was loaded without its combine kernel");
  const int64_t out_rows = s.batch * s.heads * s.q_len;
  if (out_rows > INT_MAX) throw invalid_input(fmt::format("{} output rows exceed the grid's limit", out_rows));
  plan.combine_grid = {static_cast<unsigned>(out_rows)};
  plan.combine_block = {attn_k::COMBINE_THREADS};
}

std::string combine_stub(const char* entry, const char* parameter, const char* params, const problem& s, bool own_dv) {
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(attn_k::COMBINE_THREADS) {}({}) {{\n"
      "  attn_k::combine_splits<{}, {}{}>({});\n}}\n",
      entry, parameter, s.dtype == dtype::bf16, value_dim(s), own_dv ? ", true" : "", params);
}

const kernel_family& default_family(backend b) { return b == backend::hip ? mfma_family() : fa2_family(); }

std::optional<std::string> missing_axis(const kernel_family& f, const tile_config& c) {
  if (c.knob != 0 && f.default_space.knob_name.empty())
    return fmt::format("the family has no knob axis (config knob {})", c.knob);
  if (has_decode_axes(c) && !f.default_space.decode_axes)
    return fmt::format("the family has no decode axes (config splits {}, pack_gqa {})", c.splits, c.pack_gqa);
  return std::nullopt;
}

bool runs_on(const kernel_family& f, int cc_major, int cc_minor) {
  if (f.backend != backend::cuda) return true;
  return f.arch_specific ? cc_major == f.min_cc_major && cc_minor == 0 : cc_major >= f.min_cc_major;
}

std::vector<const kernel_family*> families_of(backend b) {
  if (b == backend::hip) return {&mfma_family()};
  return {&fa2_family(), &wgmma_family(), &hopper_family()};
}

const kernel_family& find_family(const std::string& name) {
  if (name == "fa2") return fa2_family();
  if (name == "wgmma") return wgmma_family();
  if (name == "hopper") return hopper_family();
  if (name == "mfma") return mfma_family();
  throw invalid_input(fmt::format("unknown kernel family '{}' (known: fa2, wgmma, hopper, mfma)", name));
}

std::vector<std::string> family_sources(const std::vector<std::string>& roots) {
  return kernel_sources::embedded().include_closure(roots);
}

int64_t padded_tiles_bytes(const tile_config& c, const problem& s) {
  const int elem = static_cast<int>(element_size(s.dtype));
  const int dk = attn_k::mma_head_dim(static_cast<int>(s.head_dim));
  if (!has_value_dim(s)) return attn_k::padded_tiles_bytes(c.block_m, c.block_n, c.stages, dk, elem);
  return attn_k::padded_tiles_bytes(c.block_m, c.block_n, c.stages, dk,
                                    attn_k::mma_head_dim(static_cast<int>(value_dim(s))), elem);
}

std::optional<std::string> tiling_reason(const tile_config& c, const char* groups, const char* tiles) {
  if (c.block_m % c.warps != 0 || (c.block_m / c.warps) % 16 != 0)
    return fmt::format("block_m {} over {} {} is not a whole number of 16-row {} tiles", c.block_m, c.warps,
                       groups, tiles);
  if (c.block_n % 16 != 0) return fmt::format("block_n {} is not a multiple of 16", c.block_n);
  return std::nullopt;
}

std::optional<std::string> problem_refusal(const kernel_family& f, const problem& s) {
  if (s.head_dim % f.head_dim_multiple != 0)
    return fmt::format("family {} needs a head dim that is a multiple of {} (head dim {}): fa2 takes every head dim",
                       f.name, f.head_dim_multiple, s.head_dim);
  if (has_value_dim(s) && !f.takes_value_dim)
    return fmt::format("family {} needs V's head dim to be Q's (dv {}, d {}): fa2 and hopper take dv != d", f.name,
                       value_dim(s), s.head_dim);
  if (value_dim(s) % f.head_dim_multiple != 0)
    return fmt::format("family {} needs V's head dim to be a multiple of {} (dv {}): fa2 takes every head dim",
                       f.name, f.head_dim_multiple, value_dim(s));
  if (!f.takes_variant_fields) {
    if (has_window(s))
      return fmt::format("family {} has no sliding window (window {},{}): fa2 and hopper have", f.name, s.window_left,
                         s.causal ? 0 : s.window_right);
    if (has_softcap(s)) return fmt::format("family {} has no softcap (softcap {}): fa2 and hopper have", f.name, s.softcap);
  }
  if (is_varlen(s) && !f.takes_packed)
    return fmt::format("family {} does not read a packed variable-length batch (seqlens {}): fa2 and hopper do",
                       f.name, s.seqlens);
  if (f.takes_decode_fields) return std::nullopt;
  if (s.page_size > 0)
    return fmt::format("family {} does not read a paged K/V cache (page size {}): fa2 and hopper do", f.name, s.page_size);
  if (has_kv_lens(s))
    return fmt::format("family {} does not read per-sequence K/V lengths (kv_lens {}): fa2 and hopper do", f.name, s.kv_lens);
  return std::nullopt;
}

std::string instantiation_stub(const char* header, const char* entry, const char* forward, const char* config,
                               int threads, const tile_config& c, const problem& s, int min_blocks,
                               const std::string& attributes, const std::string& extra_args) {
  const std::string bounds = min_blocks > 0 ? fmt::format("{}, {}", threads, min_blocks) : std::to_string(threads);
  return fmt::format(
      "#include \"{header}\"\n"
      "extern \"C\" __global__ void __launch_bounds__({bounds}){attributes} {entry}(const attn_k::fwd_params p) {{\n"
      "  attn_k::{forward}<attn_k::{config}<{bf16}, {d}, {bm}, {bn}, {w}, {st}, {causal}{extra}>>(p);\n"
      "}}\n",
      fmt::arg("header", header), fmt::arg("entry", entry), fmt::arg("forward", forward),
      fmt::arg("config", config), fmt::arg("bounds", bounds),
      fmt::arg("attributes", attributes.empty() ? "" : " " + attributes), fmt::arg("bf16", s.dtype == dtype::bf16),
      fmt::arg("d", s.head_dim), fmt::arg("bm", c.block_m), fmt::arg("bn", c.block_n), fmt::arg("w", c.warps),
      fmt::arg("st", c.stages), fmt::arg("causal", s.causal),
      fmt::arg("extra", extra_args.empty() ? "" : ", " + extra_args));
}

}  // namespace attn
