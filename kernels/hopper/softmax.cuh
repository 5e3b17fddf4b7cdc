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

/// SOFTCAP_POLY (schedule bit 64): softcap and the online softmax of an unmasked tile in one pass,
/// tanh on the FMA pipes. With softcap each score takes two SFU ops (tanh.approx and exp2), which at
/// D 128 keep the SFU as busy as the tile's products keep the tensor cores (NOTES V13); here tanh(x)
/// is x (c0 + c1 x^2 + c2 x^4), x = s scale / C, within 2.2e-4 of it for |x| < 0.75 (tanh.approx:
/// 2^-11), folded with C and scale_log2 into hp.softcap_poly; where every |x| of the warp's rows is
/// below 0.34, x (c0 + c1 x^2) is as close (hp.softcap_poly3, one FFMA a score less: NOTES V14).
/// Taken when every score of the warp's rows has |s| < hp.softcap_fast_limit; else returns false
/// and leaves s alone (the caller caps it with tanh.approx). A row's reference max is the cap of its
/// largest |s|: an upper bound of its capped scores (the polynomials are odd and increasing there)
/// at most 2^92 above their max (the limit keeps the cap within 32 of 0), so P stays a normal float
/// (> 2^-101) and <= 256, and the scores are read once for the bound and once for exp2. any_grow:
/// as wg_softmax's return.
template <class C, int NW, class Poly>
__device__ __forceinline__ bool wg_softcap_poly_pass(float (&s)[C::BLOCK_N / 2], float (&alpha)[2], float (&row_max)[2],
                                                     float (&row_sum)[2], const float (&bound)[2], float scale_log2,
                                                     Poly poly) {
  bool grow_any = false;
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // common/softmax.cuh's online_softmax_step, from the bound
    const float mx = bound[h] * poly(bound[h] * bound[h]);
    const bool grow = mx - row_max[h] * scale_log2 > 8.f;
    const float ref = grow ? __fdividef(mx, scale_log2) : row_max[h];
    alpha[h] = grow ? exp2f((row_max[h] - ref) * scale_log2) : 1.f;
    grow_any |= grow;
    row_max[h] = ref;
    const float mx_scaled = ref * scale_log2;
    float sum2[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < NW / 4; ++i) {
      float& v = s[i / 2 * 4 + h * 2 + i % 2];
      v = exp2f(fmaf(v, poly(v * v), -mx_scaled));
      sum2[i % 2] += v;
    }
    row_sum[h] = row_sum[h] * alpha[h] + sum2[0] + sum2[1];
  }
  return __any_sync(0xffffffffu, grow_any);
}

template <class C, int NW, class HopperParams>
__device__ __forceinline__ bool wg_softcap_poly(float (&s)[C::BLOCK_N / 2], float (&alpha)[2], float (&row_max)[2],
                                                float (&row_sum)[2], const HopperParams& hp, bool& any_grow) {
  const float scale_log2 = hp.p.scale_log2;
  float a[4] = {0.f, 0.f, 0.f, 0.f};  // |s| maxima: rows g (k 0, 1) and g + 8 (k 2, 3)
#pragma unroll
  for (int i = 0; i < NW / 2; ++i) a[i % 4] = fmaxf(a[i % 4], fabsf(s[i]));
  float bound[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    bound[h] = fmaxf(a[2 * h], a[2 * h + 1]);
    bound[h] = fmaxf(bound[h], warp_xor(bound[h], 1));
    bound[h] = fmaxf(bound[h], warp_xor(bound[h], 2));
  }
  const float widest = fmaxf(bound[0], bound[1]);
  // The capped score times scale_log2 is s poly(s^2).
  if (__all_sync(0xffffffffu, widest < hp.softcap_fast3_limit)) {
    auto poly3 = [&](float y) { return fmaf(hp.softcap_poly3[1], y, hp.softcap_poly3[0]); };
    any_grow = wg_softcap_poly_pass<C, NW>(s, alpha, row_max, row_sum, bound, scale_log2, poly3);
    return true;
  }
  if (!__all_sync(0xffffffffu, widest < hp.softcap_fast_limit)) return false;
  auto poly = [&](float y) { return fmaf(fmaf(hp.softcap_poly[2], y, hp.softcap_poly[1]), y, hp.softcap_poly[0]); };
  any_grow = wg_softcap_poly_pass<C, NW>(s, alpha, row_max, row_sum, bound, scale_log2, poly);
  return true;
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
