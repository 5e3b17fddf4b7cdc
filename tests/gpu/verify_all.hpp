#pragma once
// What the correctness suites of fa2's (and hopper's) problem options share (decode, KV caches, windows and softcap): a problem from
// its numbers, and every variant of a space tuned on fresh random inputs, each required to pass.
#include <cstdio>
#include <optional>
#include <string>

#include "codegen/family.hpp"
#include "core/config.hpp"

#include "gpu_fixture.hpp"
#include "run/tuner.hpp"

namespace attn::testing {

inline problem decode(int64_t b, int64_t h, int64_t hk, int64_t nq, int64_t nk, int64_t d, bool causal, dtype t = dtype::bf16,
               layout l = layout::bhsd) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = nq, s.kv_len = nk, s.head_dim = d;
  s.causal = causal, s.dtype = t, s.layout = l;
  return s;
}

/// Tunes every variant of `space` (of `family`) on s: each that is not pruned must pass the
/// reference check on `inputs`; returns how many did (and prints it, unless quiet).
inline int verify_all(const problem& s, const gpu_info& gpu, const compile_cache& cache, const search_space& space,
                      const std::string& family = "fa2", bool quiet = false, input_kind inputs = input_kind::normal) {
  tune_options t;
  t.family = family;
  t.inputs = inputs;
  t.space = space;
  t.seed = 7;
  t.timing.min_reps = 2;
  t.timing.max_reps = 2;
  t.timing.min_total_ms = 0;
  t.search = search_kind::exhaustive;
  const tune_result r = tune(s, gpu, cache, t);
  int ok = 0;
  for (const auto& rec : r.records) {
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.status, status::ok) << name(rec.config) << ": " << to_string(rec.status) << " " << rec.message;
    if (rec.status != status::ok) continue;
    ++ok;
    EXPECT_LE(rec.max_error, r.allowed_error) << name(rec.config);
  }
  if (!quiet) std::printf("%s: %d variants ok, allowed error %.3e\n", describe(s).c_str(), ok, r.allowed_error);
  return ok;
}

/// Why hopper's variants cannot be checked on s here (not an sm_90 GPU, or hopper refuses s);
/// nullopt when they can.
inline std::optional<std::string> hopper_skip_reason(const gpu_info& gpu, const problem& s) {
  if (gpu.backend != backend::cuda || !runs_on(hopper_family(), gpu.desc.cc_major, gpu.desc.cc_minor))
    return "hopper runs on sm_90 (Hopper) only; this is " + gpu.desc.arch;
  return problem_refusal(hopper_family(), s);
}

/// Every variant of a small hopper space on s must pass (at least 4): two and three computing
/// warpgroups, tiles of 64, 80 and 128 keys, the overlap, ping-pong, the persistent grid, two Q
/// tiles and the half-width last tile.
inline void expect_every_hopper_variant_passes(const problem& s, const gpu_info& gpu, const compile_cache& cache) {
  const search_space space = parse_space(
      {"block_m=128,192", "block_n=64,80,128", "warps=12,16", "stages=2", "schedule=3,6,7,13,22"},
      hopper_family().default_space);
  EXPECT_GE(verify_all(s, gpu, cache, space, "hopper"), 4);
}

}  // namespace attn::testing
