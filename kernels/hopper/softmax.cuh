#pragma once
// The online softmax of one warpgroup's S tile in the wgmma accumulator layout (per thread: rows
// g and g + 8 of its warp's 16, columns 2t, 2t + 1 of every 8-column chunk), P's packing into the
// A operand of the register-operand wgmma, and O's rescaling.
#include "common/device.cuh"

namespace attn_k {

/// Online softmax of one tile of S in place (S becomes the unnormalized probabilities, fp32);
/// alpha: the factor O must be rescaled by; returns whether any row of the warp needs it.
/// MASK applies the causal / kv_len mask. NW: the tile's first NW keys only (the rest of s is
/// left alone and takes no part). This is online_softmax_rows (common/attention.cuh)
/// but for the order of the row sum's last two additions: switching to it changes the wgmma
/// binaries, so that waits for a GPU run to verify and time it.
template <class C, bool MASK, int NW = C::BLOCK_N>
__device__ __forceinline__ bool wg_softmax(float (&s)[C::BLOCK_N / 2], float (&alpha)[2], float (&row_max)[2],
                                           float (&row_sum)[2], int n0, int warp_row0, int causal_offset,
                                           int kv_len, float scale_log2) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  bool any_grow = false;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = warp_row0 + g + h * 8;
    const int visible = C::CAUSAL ? min(kv_len, row + causal_offset + 1) - n0 - t * 2 : 0;
    float mx2[2] = {row_max[h], neg_inf()};
#pragma unroll
    for (int nf = 0; nf < NW / 8; ++nf) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[nf * 4 + h * 2 + e];
        if constexpr (MASK && C::CAUSAL) {
          if (nf * 8 + e >= visible) x = neg_inf();
        } else if constexpr (MASK) {
          if (n0 + nf * 8 + t * 2 + e >= kv_len) x = neg_inf();
        }
        mx2[e] = fmaxf(mx2[e], x);
      }
    }
    const float mx = quad_max(fmaxf(mx2[0], mx2[1]));
    // Lazy rescaling, as in fa2: the reference max moves only when the row max grows by > 2^8.
    const bool grow = (mx - row_max[h]) * scale_log2 > 8.f;
    const float ref = grow ? mx : row_max[h];
    alpha[h] = grow ? exp2f((row_max[h] - ref) * scale_log2) : 1.f;
    any_grow |= grow;
    row_max[h] = ref;
    const float mx_scaled = ref == neg_inf() ? 0.f : ref * scale_log2;
    float sum2[2] = {0.f, 0.f};
#pragma unroll
    for (int nf = 0; nf < NW / 8; ++nf) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[nf * 4 + h * 2 + e];
        x = exp2f(fmaf(x, scale_log2, -mx_scaled));
        sum2[e] += x;
      }
    }
    row_sum[h] = row_sum[h] * alpha[h] + sum2[0] + sum2[1];
  }
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
__device__ __forceinline__ void wg_rescale(float (&acc)[C::D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int df = 0; df < C::D / 8; ++df) {
    acc[4 * df + 0] *= alpha[0];
    acc[4 * df + 1] *= alpha[0];
    acc[4 * df + 2] *= alpha[1];
    acc[4 * df + 3] *= alpha[1];
  }
}

}  // namespace attn_k
