#pragma once
// Kernel parameters, shared verbatim by the host (src/) and the run-time compiled kernels.
// Plain C++ only: no host or CUDA headers, so NVRTC and g++ both accept it.

namespace attn_k {

/// Strides are in elements. Q and O share strides and K and V do when dv = d (every family reads
/// q_* and kv_* then); with dv != d (the fa2 family's DV) V's and O's are v_* and o_*.
struct fwd_params {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;  ///< [B, H, Nq], natural log; -inf for a row that sees no key
  long long q_batch_stride, q_head_stride, q_row_stride;
  long long kv_batch_stride, kv_head_stride, kv_row_stride;
  int q_len;
  int kv_len;
  int heads;
  int group;            ///< heads / kv_heads: query head h reads kv head h / group
  float scale_log2;     ///< softmax scale * log2(e)
  float softmax_scale;  ///< 1 / sqrt(D) by default
  // Decode (the fa2 family's split-KV and packed GQA; other families leave these unset).
  int batch;
  /// Split-KV: num_splits blocks share each row block's K/V tiles; each writes its normalized O
  /// (fp32, [splits, B, H, Nq, D]) to o_partial and its LSE ([splits, B, H, Nq]) to lse_partial,
  /// and the last split of each row block merges them into o and lse (up to FUSED_MERGE_SPLITS
  /// splits; the combine kernel above). The workspace's SPLIT_COUNTERS counters come just before
  /// o_partial. num_splits 0 or 1: no split.
  int num_splits;
  float* o_partial;
  float* lse_partial;
  long long workspace_floats;  ///< what o_partial has room for (the host checks it)
  // Per-sequence lengths and a paged cache (the fa2 family's LENS and PAGED; others leave them).
  /// Each sequence's K/V length ([B], each at most kv_len, the cache's capacity); nullptr: kv_len.
  const int* seqlens_k;
  /// Paged K/V: row n of sequence b is row n % page_size of page block_table[b * pages_per_seq +
  /// n / page_size]; K and V are [pages, page_size, kv_heads, D], kv_batch_stride the page stride.
  const int* block_table;
  int pages_per_seq;
  int page_shift;  ///< log2(page_size)
  // A sliding window and softcap (the fa2 family's WINDOW and SOFTCAP; others leave them).
  /// Query i sees keys [i + off - window_left, i + off + window_right], off = kv_len - q_len of its
  /// sequence; -1: no limit on that side (causal: window_right is 0).
  int window_left, window_right;
  /// Softcap C on scores in raw q.k units: s becomes softcap_out * tanh(s * softcap_in), with
  /// softcap_in = scale / C and softcap_out = C / scale (the softmax scale applied first).
  float softcap_in, softcap_out;
  /// V's and O's strides (always set by the host; equal to K's and Q's when dv = d). Only kernels
  /// built for dv != d read them, and the support module.
  long long v_batch_stride, v_head_stride, v_row_stride;
  long long o_batch_stride, o_head_stride, o_row_stride;
  // A packed variable-length batch (flash_attn_varlen_func; the fa2 family's VARLEN, others leave
  // these unset). Sequence b's queries are rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of Q and O,
  // its keys rows [cu_seqlens_k[b], cu_seqlens_k[b + 1]) of K and V (the batch strides are 0); q_len
  // and kv_len are the longest (max_seqlen_q, max_seqlen_k); the LSE is [H, total_q]. nullptr: not
  // packed.
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int total_q, total_k;  ///< rows of the packed Q (and O) and K (and V); a paged cache: total_k its pages
};

}  // namespace attn_k
