#pragma once
// The two products of one K/V tile for a warpgroup's 64 query rows, issued asynchronously:
// S = Q K^T (both operands in shared memory, K-major) and O += P V (P from registers, V read
// N-major). C names D, DV (V's head dim), BLOCK_M, BLOCK_N and BF16; tiles are in common/swizzle.cuh's layout.
#include "common/hopper_ptx.cuh"
#include "common/swizzle.cuh"
#include "common/wgmma_ops.cuh"

namespace attn_k {

/// The pieces of one K/V tile for this thread's warpgroup. The S and P V products are issued
/// asynchronously; the caller decides what runs while they do. NW: how many of the tile's keys
/// (its first NW rows) take part, BLOCK_N or fewer (a diagonal tile of which this warpgroup's
/// rows see only the first half): S fills s[0, NW / 2), P V reads p[0, NW / 16).
/// q_wg: this warpgroup's first Q row (64 rows into piece 0 per warpgroup); the k-th 16 columns
/// are bytes 32 k of a row: piece 32 k / W, 32 k % W into it.
template <class C, int NW = C::BLOCK_N>
__device__ __forceinline__ void wg_issue_s(float (&s)[C::BLOCK_N / 2], unsigned q_wg, unsigned k_smem) {
  static_assert(NW % 16 == 0 && NW <= C::BLOCK_N, "NW: a multiple of 16 up to BLOCK_N");
  float(&d)[NW / 2] = reinterpret_cast<float(&)[NW / 2]>(s);
  constexpr int W = swizzle<C::D>::W;
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < C::D / 16; ++kk) {
    const unsigned piece = kk * 32 / W, within = kk * 32 % W;
    const unsigned long long a = wg_desc<C::D>(q_wg + piece * C::BLOCK_M * W + within, 0, 8 * W);
    const unsigned long long b = wg_desc<C::D>(k_smem + piece * C::BLOCK_N * W + within, 0, 8 * W);
    wgmma_op<C::BF16, NW>::ss(d, a, b, kk > 0);
  }
  wg_commit();
}

/// O += P V. V's tile is [key][dv] in the swizzled layout (C::DV wide: V's head dim), read
/// MN-major: keys are the K dimension (16 keys = 16 rows of W bytes per step), dv the N dimension
/// (pieces BLOCK_N * W bytes apart). P's registers must stay untouched until the product has completed.
template <class C, int NW = C::BLOCK_N>
__device__ __forceinline__ void wg_issue_pv(float (&acc)[C::DV / 2], const unsigned (&p)[C::BLOCK_N / 16][4],
                                            unsigned v_smem) {
  wg_fence_operand(acc);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < NW / 16; ++kk) {
    const unsigned long long b =
        wg_desc<C::DV>(v_smem + kk * 16 * swizzle<C::DV>::W, C::BLOCK_N * swizzle<C::DV>::W, 8 * swizzle<C::DV>::W);
    wgmma_op<C::BF16, C::DV>::rs(acc, p[kk], b, 1);
  }
  wg_commit();
}

}  // namespace attn_k
