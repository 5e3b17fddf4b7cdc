#pragma once
// The parts of the forward pass that the NVIDIA families (fa2 on mma.sync, wgmma on warpgroup
// MMA) share: which K/V tiles a block of query rows attends to, and the masked online softmax of
// one 16-row MMA tile of S. Both instructions leave S in the same per-thread layout: for each
// 8-column chunk nf, s[nf][0..1] are row g's columns 2t, 2t+1 and s[nf][2..3] row g+8's (g =
// lane / 4, t = lane % 4).
#include "common/device.cuh"
#include "common/params.cuh"

namespace attn_k {

/// Q, K and V of one (batch, head); GQA/MQA heads read K/V head head / group.
struct head_inputs {
  const elem_bits* q;
  const elem_bits* k;
  const elem_bits* v;
};
__device__ __forceinline__ head_inputs inputs_of(const fwd_params& p, int batch, int head) {
  head_inputs in;
  in.q = static_cast<const elem_bits*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride;
  const long long kv_base = batch * p.kv_batch_stride + (head / p.group) * p.kv_head_stride;
  in.k = static_cast<const elem_bits*>(p.k) + kv_base;
  in.v = static_cast<const elem_bits*>(p.v) + kv_base;
  return in;
}

/// The keys that query rows [m0, m0 + rows) see: the first kv_seen() of them (all, or when causal
/// (aligned bottom-right: causal_offset = kv_len - q_len) those up to the last row's key).
template <bool CAUSAL>
__device__ __forceinline__ int kv_seen(const fwd_params& p, int m0, int rows, int causal_offset) {
  int kv_end = p.kv_len;
  if (CAUSAL) {
    const int last_row = min(m0 + rows, p.q_len) - 1;
    kv_end = max(0, min(kv_end, last_row + causal_offset + 1));
  }
  return kv_end;
}

/// K/V tiles of BLOCK_N keys that query rows [m0, m0 + BLOCK_M) attend to.
template <int BLOCK_M, int BLOCK_N, bool CAUSAL>
__device__ __forceinline__ int kv_tiles(const fwd_params& p, int m0, int causal_offset) {
  return (kv_seen<CAUSAL>(p, m0, BLOCK_M, causal_offset) + BLOCK_N - 1) / BLOCK_N;
}

/// Tiles [0, n) need no mask for rows from first_row on: they end before the last key and, when
/// causal, before first_row's diagonal. The rest (the diagonal, a ragged last tile) are masked.
template <int BLOCK_N, bool CAUSAL>
__device__ __forceinline__ int unmasked_tiles(const fwd_params& p, int first_row, int causal_offset, int n_blocks) {
  int n_plain = p.kv_len / BLOCK_N;
  if (CAUSAL) n_plain = min(n_plain, max(0, first_row + causal_offset + 1) / BLOCK_N);
  return min(n_plain, n_blocks);
}

/// Masks (MASK: the causal diagonal, keys past kv_len) and runs the online softmax over this
/// thread's two rows (row0 and row0 + 8) of one 16-row tile of S, keys n0 on: S becomes the
/// unnormalized probabilities, row_max / row_sum are updated and alpha is what O must be scaled
/// by; any_grow is set when either row needs that (the caller reduces it over the warp).
template <int BLOCK_N, bool CAUSAL, bool MASK>
__device__ __forceinline__ void online_softmax_rows(float (&s)[BLOCK_N / 8][4], float (&row_max)[2],
                                                    float (&row_sum)[2], float (&alpha)[2], bool& any_grow,
                                                    int row0, int t, int n0, int causal_offset, int kv_len,
                                                    float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + h * 8;
    // Causal: keys visible to this row, counted from this thread's first column of the tile,
    // so the test per element compares with a compile-time constant. (Measured on the H200:
    // this form is faster for causal tiles, the plain column test for ragged-only ones.)
    const int visible = CAUSAL ? min(kv_len, row + causal_offset + 1) - n0 - t * 2 : 0;
    // Two independent partial maxima / sums per row: shorter dependency chains, more ILP.
    float mx2[2] = {row_max[h], neg_inf()};
#pragma unroll
    for (int nf = 0; nf < BLOCK_N / 8; ++nf) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[nf][h * 2 + e];
        if constexpr (MASK && CAUSAL) {
          if (nf * 8 + e >= visible) x = neg_inf();
        } else if constexpr (MASK) {
          if (n0 + nf * 8 + t * 2 + e >= kv_len) x = neg_inf();
        }
        mx2[e] = fmaxf(mx2[e], x);
      }
    }
    const float mx = quad_max(fmaxf(mx2[0], mx2[1]));
    // Lazy rescaling: keep the reference max until the row max grows by more than 2^8, so
    // P stays <= 256 (exact enough in bf16/fp16) and most tiles skip rescaling O.
    const bool grow = (mx - row_max[h]) * scale_log2 > 8.f;
    const float ref = grow ? mx : row_max[h];
    alpha[h] = grow ? exp2f((row_max[h] - ref) * scale_log2) : 1.f;
    any_grow |= grow;
    row_max[h] = ref;
    const float mx_scaled = ref == neg_inf() ? 0.f : ref * scale_log2;
    float sum2[2] = {0.f, 0.f};
#pragma unroll
    for (int nf = 0; nf < BLOCK_N / 8; ++nf) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[nf][h * 2 + e];
        x = exp2f(fmaf(x, scale_log2, -mx_scaled));
        sum2[e] += x;
      }
    }
    const float sum = sum2[0] + sum2[1];
    row_sum[h] = row_sum[h] * alpha[h] + sum;
  }
}

}  // namespace attn_k
