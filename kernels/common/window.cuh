#pragma once
// A sliding window's edges, the one rule of the forward kernels (common/attention.cuh) and the
// backward's (fa2_bwd.cuh).

namespace attn_k {

/// A sliding window's edges for query row i (causal_offset = kv_len - q_len): the first key it
/// sees, and one past its last; a side of -1 does not limit. Either may fall outside [0, kv_len)
/// for a row that sees no key (begin >= end then).
__device__ __forceinline__ int window_key_begin(int i, int causal_offset, int left) {
  return left < 0 ? 0 : max(0, i + causal_offset - left);
}
__device__ __forceinline__ int window_key_end(int i, int causal_offset, int right, int kv_len) {
  return right < 0 ? kv_len : max(0, min(kv_len, i + causal_offset + right + 1));
}

}  // namespace attn_k
