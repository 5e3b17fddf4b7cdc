#pragma once
// The online softmax of one warpgroup's S tile in the wgmma accumulator layout (per thread: rows
// g and g + 8 of its warp's 16, columns 2t, 2t + 1 of every 8-column chunk), P's packing into the
// A operand of the register-operand wgmma, and O's rescaling.
#include "common/attention.cuh"

namespace attn_k {

/// Online softmax of one tile of S in place (S becomes the unnormalized probabilities, fp32):
/// common/attention.cuh's step over this thread's two rows; alpha: the factor O must be rescaled
/// by; returns whether any row of the warp needs it. MASK: the tile is partial. NW: the tile's
/// first NW keys only (the rest of s is left alone and takes no part).
/// Rows: the mask's row_masks (attention_mask<...>::rows()).
template <class C, bool MASK, int NW = C::BLOCK_N, class Rows>
__device__ __forceinline__ bool wg_softmax(float (&s)[C::BLOCK_N / 2], float (&alpha)[2], float (&row_max)[2],
                                           float (&row_sum)[2], int n0, int warp_row0, const Rows& mask,
                                           float scale_log2) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  bool any_grow = false;
  quad_rows_softmax<NW, MASK, false>([&](int nf, int k) -> float& { return s[nf * 4 + k]; }, mask, warp_row0 + g, n0,
                                     t, row_max, row_sum, alpha, any_grow, scale_log2);
  return __any_sync(0xffffffffu, any_grow);
}

/// P in the element type: the S accumulator layout of two adjacent 8-column chunks is exactly a
/// 16-wide A fragment of the register-operand wgmma.
template <class C, int NW = C::BLOCK_N>
__device__ __forceinline__ void wg_pack_p(unsigned (&p)[C::BLOCK_N / 16][4], const float (&s)[C::BLOCK_N / 2]) {
#pragma unroll
  for (int kk = 0; kk < NW / 16; ++kk) {
    p[kk][0] = pack2<C::BF16>(s[8 * kk + 0], s[8 * kk + 1]);
    p[kk][1] = pack2<C::BF16>(s[8 * kk + 2], s[8 * kk + 3]);
    p[kk][2] = pack2<C::BF16>(s[8 * kk + 4], s[8 * kk + 5]);
    p[kk][3] = pack2<C::BF16>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

template <class C>
__device__ __forceinline__ void wg_rescale(float (&acc)[C::DV / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int df = 0; df < C::DV / 8; ++df) {
    acc[4 * df + 0] *= alpha[0];
    acc[4 * df + 1] *= alpha[0];
    acc[4 * df + 2] *= alpha[1];
    acc[4 * df + 3] *= alpha[1];
  }
}

}  // namespace attn_k
