#pragma once
// Split-KV's merge of one output row from its splits' partial results, in plain C++ that the
// host (g++, for the float64 test) and the run-time compilers (NVRTC, hiprtc) all accept.
// Each split s saw a share of the row's keys and wrote its normalized O_s and its LSE lse_s
// (-inf: it saw none). Then lse = log(sum_s exp(lse_s)) and O = sum_s exp(lse_s - lse) O_s.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define ATTN_MERGE_ON_DEVICE 1
#define ATTN_MERGE __device__ __forceinline__
#else
#include <math.h>
#define ATTN_MERGE inline
#endif

namespace attn_k {

ATTN_MERGE float merge_neg_inf() {
#ifdef ATTN_MERGE_ON_DEVICE
  return __int_as_float(0xff800000);
#else
  return -HUGE_VALF;
#endif
}

/// The merged LSE of a row: LANES threads share it, thread `lane` reading splits lane, lane +
/// LANES, ...; reduce_max and reduce_sum combine the threads' values (the identity for one).
/// -inf when no split saw a key.
template <int LANES, class LseAt, class Max, class Sum>
ATTN_MERGE float merged_lse(int lane, int splits, LseAt lse_at, Max reduce_max, Sum reduce_sum) {
  float top = merge_neg_inf();
  for (int s = lane; s < splits; s += LANES) top = fmaxf(top, lse_at(s));
  top = reduce_max(top);
  float sum = 0.f;
  if (top != merge_neg_inf())
    for (int s = lane; s < splits; s += LANES) sum += expf(lse_at(s) - top);
  sum = reduce_sum(sum);
  return sum > 0.f ? top + logf(sum) : merge_neg_inf();
}

/// Split s's weight in the merged O, exp(lse_s - lse): 0 for a split that saw no key (its O_s is
/// 0) and for a row no split saw a key of.
ATTN_MERGE float split_weight(float lse_s, float lse) {
  return lse_s == merge_neg_inf() || lse == merge_neg_inf() ? 0.f : expf(lse_s - lse);
}

/// One element of the merged O: sum_s split_weight(lse_s, lse) o_at(s).
template <class LseAt, class OAt>
ATTN_MERGE float merged_o(int splits, float lse, LseAt lse_at, OAt o_at) {
  float x = 0.f;
  for (int s = 0; s < splits; ++s) x += split_weight(lse_at(s), lse) * o_at(s);
  return x;
}

}  // namespace attn_k
