#pragma once
// The online softmax step every family runs (fa2, wgmma, hopper, mfma): one query row's scores of
// one K/V tile, as far as this thread holds them, after the mask has been applied (a masked score
// is -inf here: the step knows nothing of masks). Vendor-neutral: the reduction over the lanes that
// share a row is the caller's (a quad of 4 lanes on NVIDIA, 4 lanes 16 apart on AMD).
#include "common/vendor.cuh"

namespace attn_k {

/// The limit of a row of a full tile: nothing hidden.
struct no_limit {
  __device__ __forceinline__ static constexpr bool hides(int) { return false; }
};

/// One online-softmax step for one query row: x(i), i in [0, N), are the row's scores of this
/// tile held by this thread (a float& each, taken in that order), in units where
/// exp2(x * scale_log2) is the unnormalized probability. They become the probabilities relative
/// to the row's reference max, row_max / row_sum are updated, and alpha is what the row's O must
/// be scaled by. Sets any_grow when the reference max moved (alpha != 1).
///
/// PARTS independent partial maxima and sums (score i in chain i % PARTS): shorter dependency
/// chains, more ILP. row_reduce_max(m): the max of m over the lanes sharing the row.
/// SUM_PARTS_FIRST: the partial sums are added together before the old sum joins them (fa2,
/// mfma), or one after the other onto it (wgmma, hopper). The two orders round differently, so
/// each family keeps the one its binaries were measured and verified with; unifying them waits for
/// a GPU run to verify and time it.
///
/// Lazy rescaling: the reference max moves only when the row max grows by more than 2^8 (in
/// exp2 units), so P stays <= 256 (exact enough in bf16/fp16) and most tiles skip rescaling O.
template <int N, int PARTS, bool SUM_PARTS_FIRST, class X, class Reduce, class Col, class Limit>
__device__ __forceinline__ void online_softmax_step(X&& x, Reduce&& row_reduce_max, float& row_max, float& row_sum,
                                                    float& alpha, bool& any_grow, float scale_log2, Col&& col,
                                                    const Limit& limit) {
  static_assert(PARTS == 1 || PARTS == 2, "one or two partial chains");
  float mx2[PARTS];
  mx2[0] = row_max;
  if constexpr (PARTS == 2) mx2[1] = neg_inf();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float& v = x(i);
    if (limit.hides(col(i))) v = neg_inf();
    mx2[i % PARTS] = fmaxf(mx2[i % PARTS], v);
  }
  float mx = mx2[0];
  if constexpr (PARTS == 2) mx = fmaxf(mx2[0], mx2[1]);
  mx = row_reduce_max(mx);
  const bool grow = (mx - row_max) * scale_log2 > 8.f;
  const float ref = grow ? mx : row_max;
  alpha = grow ? exp2f((row_max - ref) * scale_log2) : 1.f;
  any_grow |= grow;
  row_max = ref;
  const float mx_scaled = ref == neg_inf() ? 0.f : ref * scale_log2;
  float sum2[PARTS];
#pragma unroll
  for (int k = 0; k < PARTS; ++k) sum2[k] = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float& v = x(i);
    v = exp2f(fmaf(v, scale_log2, -mx_scaled));
    sum2[i % PARTS] += v;
  }
  if constexpr (PARTS == 1) {
    row_sum = row_sum * alpha + sum2[0];
  } else if constexpr (SUM_PARTS_FIRST) {
    const float sum = sum2[0] + sum2[1];
    row_sum = row_sum * alpha + sum;
  } else {
    row_sum = row_sum * alpha + sum2[0] + sum2[1];
  }
}

/// A row's natural-log LSE from its running max (raw q.k units) and its sum of exp2 terms: -inf for
/// a row that saw no key.
__device__ __forceinline__ float row_lse(float row_max, float sum, float scale_log2) {
  return sum > 0.f ? (row_max * scale_log2 + log2f(sum)) * 0.69314718056f : neg_inf();
}

}  // namespace attn_k
