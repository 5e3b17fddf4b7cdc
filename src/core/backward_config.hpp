#pragma once
// A variant of the backward pass's kernels (codegen/backward.hpp builds and launches them): its
// name, as tables, CSV, databases and --configs write it.
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

/// One backward variant: the dK/dV kernel's tile (kv_block_n keys a block, split over kv_warps;
/// kv_block_m queries a step through a ring of kv_stages) and the dQ kernel's (q_block_m rows a
/// block, split over q_warps; q_block_n keys a step through a ring of q_stages).
/// wgmma: the kernels of kernels/wgmma_bwd.cuh (sm_90a: each warpgroup 64 keys of the dK/dV
/// kernel's block, 64 rows of the dQ kernel's), else kernels/fa2_bwd.cuh's (mma.sync, sm_80+).
/// split_dkdv: dK and dV by two launches of the dK/dV kernel (dV, then dK, each recomputing P^T),
/// for head dims whose dK and dV together do not fit the registers (D > 128).
/// atomic_dq: no dQ kernel (its q_* fields are 0): the dK/dV kernel adds dS K to an fp32 sum by
/// atomics and a last kernel converts it (wgmma only; five products instead of seven, reruns are
/// not bit-identical).
struct backward_config {
  int kv_block_m = 32, kv_block_n = 64, kv_warps = 4, kv_stages = 2;
  int q_block_m = 64, q_block_n = 64, q_warps = 4, q_stages = 2;
  bool wgmma = false;
  bool split_dkdv = false;
  bool atomic_dq = false;
  bool operator==(const backward_config&) const = default;
};
/// "kv_m64_n64_w4_s2-q_m64_n64_w4_s2", with "wg_" before it for the wgmma kernels and "_x2" after
/// the dK/dV kernel's tile when it is split; "-dq_atomic" in place of the dQ kernel's tile.
std::string name(const backward_config& c);
/// Parses name()'s text; throws invalid_input naming the text.
backward_config parse_backward_config(const std::string& text);
/// The dK/dV kernel's tile as a forward config's fields (block_m = kv_block_m, block_n, warps,
/// stages): a backward record's block_m ... stages columns.
struct tile_config;
tile_config dkdv_tile(const backward_config& c);
/// The backward's fallbacks (pass bwd, nothing tuned), in order: fa2's kv_m32_n64_w4_s2-q_m64_n64_w4_s2,
/// above D = 128 kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1 (dK and dV in two launches); then, where its
/// shared memory does not fit (sm_86, sm_89: 99 KiB), single-stage tiles that do; above 128, last,
/// kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s2 (a packed batch's, whose one-stage dQ kernels spill).
/// head_dim: the larger of Q's and V's head dims.
std::vector<backward_config> fallback_backwards(int64_t head_dim);
/// Whether the dK/dV kernel is warp-specialized (wgmma, atomic dQ, a producer warpgroup beside the
/// computing ones: kv_warps = kv_block_n / 16 + 4, e.g. wg_kv_m64_n128_w12_s2-dq_atomic).
inline bool warp_specialized(const backward_config& c) {
  return c.wgmma && c.atomic_dq && c.kv_warps == c.kv_block_n / 16 + 4;
}
/// Whether reruns on the same inputs give bit-identical gradients (all but atomic dQ's).
inline bool deterministic(const backward_config& c) { return !c.atomic_dq; }
/// Whether the text has name()'s form (a backward variant's name, not a forward config's).
bool is_backward_config_name(const std::string& text);

}  // namespace attn
