#pragma once
// The backward pass's parameters (kernels/fa2_bwd.cuh), shared verbatim by the host (src/) and the
// run-time compiled kernels. Plain C++ only: no host or CUDA headers, so NVRTC and g++ both accept it.

namespace attn_k {

/// Strides are in elements. Q and dQ share one set of strides (q_*), K and dK another (kv_*), O and
/// dO a third (o_*) and V and dV a fourth (v_*): rows of D, D, DV and DV elements (DV: V's head dim,
/// D where V has Q's; the v_* and o_* strides then equal kv_* and q_*). The LSE and delta are
/// [B, H, Nq] floats ([H, total_q] for a packed batch: cu_seqlens_q below).
struct bwd_params {
  const void* q;
  const void* k;
  const void* v;
  const void* o;    ///< the forward's output
  const void* d_o;  ///< the loss's gradient with respect to O
  const float* lse;  ///< the forward's LSE, natural log; -inf for a row that sees no key
  float* delta;      ///< written by the first kernel: rowsum(dO * O) for each query row
  void* dq;
  void* dk;
  void* dv;
  /// fp32 [batch][head][query row][D], the atomic-dQ variants' sum (zeroed by their bwd_delta);
  /// null for the others.
  float* dq_accum;
  long long q_batch_stride, q_head_stride, q_row_stride;
  long long kv_batch_stride, kv_head_stride, kv_row_stride;
  int q_len;
  int kv_len;
  int heads;
  int group;  ///< heads / kv_heads: query head h reads K/V head h / group
  int batch;
  float scale_log2;     ///< softmax scale * log2(e)
  float softmax_scale;  ///< 1 / sqrt(D) by default
  /// A sliding window, as the forward's (bottom-right: query i sees key j when i + kv_len - q_len -
  /// window_left <= j <= i + kv_len - q_len + window_right); -1 = no limit on that side. Causal
  /// is a window_right of 0. Both backward families take it.
  int window_left, window_right;
  /// Softcap C, as the forward's (fwd_params): a score s in raw q.k units becomes softcap_out *
  /// tanh(s * softcap_in), softcap_in = scale / C, softcap_out = C / scale; dS carries tanh's
  /// derivative 1 - tanh^2. Read only by the SOFTCAP instantiations (both families).
  float softcap_in, softcap_out;
  long long o_batch_stride, o_head_stride, o_row_stride;  ///< O and dO
  long long v_batch_stride, v_head_stride, v_row_stride;  ///< V and dV
  /// A packed variable-length batch (the fa2 backward's VARLEN; as the forward's fwd_params):
  /// sequence b's queries are rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of Q, O, dO and dQ, its
  /// keys rows [cu_seqlens_k[b], cu_seqlens_k[b + 1]) of K, V, dK and dV (batch strides 0); q_len and
  /// kv_len are the longest; the LSE and delta are [H, total_q]. Null when not packed.
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int total_q, total_k;
};

}  // namespace attn_k
