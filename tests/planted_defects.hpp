#pragma once
// Kernel variants with known defects, planted through --kernels-dir: the verifier must call every
// one of them wrong (issue 11, item 15). Each is one text substitution in a copy of kernels/; the
// CPU tests check that each anchor exists and the planted fa2 still compiles, the GPU tests that
// each comes out `wrong`, checked on the inputs each names (--inputs): a skipped rescale only
// shows where the online softmax's lazy rescale runs after the first tile, which it never does on
// standard-normal inputs (tests/cpu/test_inputs.cpp), so it is checked on wide ones.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/kernel_sources.hpp"

namespace attn::testing {

struct planted_defect {
  const char* name;
  const char* file;  ///< relative to kernels/
  const char* from;  ///< must occur in the file
  const char* to;
  bool causal;       ///< the defect only shows with a causal mask
  const char* inputs = "normal";  ///< --inputs it is checked on
  /// The problem's other options it shows with (a window, softcap), as words of a command line.
  std::vector<std::string> options = {};
  /// The family it is checked with: fa2 anywhere, hopper on sm_90 (two variants of each).
  const char* family = "fa2";
  /// The --shape it is checked on (a packed batch needs more than one sequence).
  const char* shape = "1,4,256,64";
  /// hopper: bits OR'ed onto the schedules it is checked with (3 and 7; 64: softcap's polynomial,
  /// 256: the half-width first tile).
  int schedule_bits = 0;
};

inline const std::vector<planted_defect>& planted_defects() {
  static const std::vector<planted_defect> all = {
      {"causal_mask_off_by_one", "common/attention.cuh", "min(kv_len, row + causal_offset + 1) - n0",
       "min(kv_len, row + causal_offset + 2) - n0", true},
      {"wrong_scale", "fa2.cuh", "m0, mask.rows(), p.scale_log2, p.softcap_in", "m0, mask.rows(), p.scale_log2 * 1.125f, p.softcap_in", false},
      {"one_row_never_written", "fa2.cuh", "    if (m < rows) {\n", "    if (m < rows && m != 5) {\n", false},
      // The LSE rule all families share (common/softmax.cuh's row_lse), checked through fa2.
      {"wrong_lse", "common/softmax.cuh", "log2f(sum)) * 0.69314718056f", "log2f(sum)) * 0.6875f", false},
      // O is not scaled when a row max grows (the row sum still is).
      {"skipped_rescale", "fa2.cuh", "if (__any_sync(0xffffffffu, any_grow))",
       "if (false && __any_sync(0xffffffffu, any_grow))", false, "wide"},
      // A sliding window's left edge one key late: each row loses its first key.
      {"window_off_by_one", "common/window.cuh", "max(0, i + causal_offset - left)",
       "max(0, i + causal_offset - left + 1)", true, "normal", {"--window", "64,0"}},
      // The cap applied to the raw q.k, before the softmax scale (C tanh(qk / C) scale).
      {"softcap_before_scale", "fa2.cuh", "mask.rows(), p.scale_log2, p.softcap_in, p.softcap_out);",
       "mask.rows(), p.scale_log2, p.softcap_in / p.softmax_scale, p.softcap_out * p.softmax_scale);", false, "normal",
       {"--softcap", "5"}},
      // hopper: the window's left edge in common/attention.cuh, as fa2's, and its own two: the tile
      // before a warpgroup's unmasked ones taken unmasked too (keys left of the window leak in),
      // and the cap applied before the scale.
      {"hopper_window_off_by_one", "common/window.cuh", "max(0, i + causal_offset - left)",
       "max(0, i + causal_offset - left + 1)", true, "normal", {"--window", "64,0"}, "hopper"},
      {"hopper_window_tile_unmasked", "hopper.cuh", "plain.full_first -= first,", "plain.full_first -= first + 1,",
       true, "normal", {"--window", "64,0"}, "hopper"},
      {"hopper_softcap_before_scale", "hopper/mainloop.cuh", "p.softcap_out * fast_tanh(s[i] * p.softcap_in)",
       "p.softcap_out * p.softmax_scale * fast_tanh(s[i] * p.softcap_in / p.softmax_scale)", false, "normal",
       {"--softcap", "5"}, "hopper"},
      // Softcap's polynomial (schedule bit 64) without its cap: exp2 of the scaled score (poly(0) is
      // c0, either degree's). On softcap 8, where standard-normal scores take the polynomial (degree
      // 5 on most warps, 3 on some) and the cap bends them.
      {"hopper_softcap_poly_uncapped", "hopper/softmax.cuh",
       "v = exp2f(fmaf(v, poly(v * v), -mx_scaled));", "v = exp2f(fmaf(v, poly(0.f), -mx_scaled));", false, "normal", {"--softcap", "8"}, "hopper",
       "1,4,256,64", 64},
      // The half-width first tile (schedule bit 256) reading the first half of V's tile for P V of
      // its second half. A window of 80 on tiles of 64 keys puts both warpgroups' first keys in
      // their first tile's second half (keys 48 and 112 for the block of rows 128-255).
      {"hopper_half_first_v_offset", "hopper/mainloop.cuh", "sm.v(rv.stage) + decltype(pw)::at * swizzle<C::DV>::W",
       "sm.v(rv.stage)", true, "normal", {"--window", "80,0"}, "hopper", "1,4,256,64", 256},
      // A packed batch's sequence one key longer: it attends to the next sequence's first key.
      {"sequence_boundary_crossed", "fa2.cuh", "p.cu_seqlens_k[batch + 1] - (int)k_row0",
       "p.cu_seqlens_k[batch + 1] + 1 - (int)k_row0", false, "normal", {"--seqlens", "100,256,37"}, "fa2",
       "3,4,256,64"},
  };
  return all;
}

/// A copy of the embedded kernels with `d` planted, in a fresh folder below `parent`; empty when
/// the anchor is not found exactly once (the kernel changed: move the defect; an anchor found
/// twice could plant the defect in code the test's problem never compiles).
inline std::filesystem::path plant(const planted_defect& d, const std::filesystem::path& parent) {
  const auto dir = parent / d.name;
  const kernel_sources embedded = kernel_sources::embedded();
  bool planted = false;
  for (auto f : embedded.files()) {
    if (f.name == d.file) {
      const auto at = f.text.find(d.from);
      if (at == std::string::npos || f.text.find(d.from, at + 1) != std::string::npos) return {};
      f.text.replace(at, std::string(d.from).size(), d.to);
      planted = true;
    }
    std::filesystem::create_directories((dir / f.name).parent_path());
    std::ofstream(dir / f.name) << f.text;
  }
  return planted ? dir : std::filesystem::path();
}

}  // namespace attn::testing
