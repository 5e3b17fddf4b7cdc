#pragma once
// Attention in float64 on the CPU: the ground truth the GPU reference is tested against, and the
// per-variant spot check of sampled rows.
#include <cstdint>
#include <vector>

#include "core/problem.hpp"

namespace attn {

/// One output row. q: D values; k, v: kv_len rows of D values, row stride `kv_row_stride`
/// elements. Keys j > last_key are masked (last_key >= kv_len - 1 means none are; < 0 means all
/// are, and then out is all zeros and lse is -infinity). scale multiplies q.k.
void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len,
                        int64_t kv_row_stride, int64_t head_dim, double scale, int64_t last_key,
                        double* out, double* lse);
/// The same for keys [first_key, last_key] (a sliding window), with scores capped to
/// softcap * tanh(score / softcap) after the scale when softcap > 0.
void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len,
                        int64_t kv_row_stride, int64_t head_dim, double scale, int64_t first_key,
                        int64_t last_key, double softcap, double* out, double* lse);

/// The same with V's rows of head_dim_v elements at their own stride (dv != d); out has head_dim_v.
void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len, int64_t k_row_stride,
                        int64_t v_row_stride, int64_t head_dim, int64_t head_dim_v, double scale, int64_t first_key,
                        int64_t last_key, double softcap, double* out, double* lse);

/// Last key a query row may see under problem s (kv_len - 1 when not causal; bottom-right
/// aligned when causal: i + kv_len - q_len, which may be negative).
int64_t last_visible_key(const problem& s, int64_t query_row);
/// The same for a sequence of its own length kv_len (kv_lens), and a sliding window's right side.
int64_t last_visible_key(const problem& s, int64_t query_row, int64_t kv_len);
/// First key a query row may see: 0, or a sliding window's left edge i + kv_len - q_len - left.
int64_t first_visible_key(const problem& s, int64_t query_row, int64_t kv_len);
/// Both for a sequence of its own query count q_len (a packed batch's): the masks are bottom-right
/// aligned to each sequence.
int64_t last_visible_key(const problem& s, int64_t query_row, int64_t q_len, int64_t kv_len);
int64_t first_visible_key(const problem& s, int64_t query_row, int64_t q_len, int64_t kv_len);

/// Whole attention for float inputs laid out per s.layout; returns O in the same layout as q
/// (rows of value_dim(s): V and O have dv) and (if lse != nullptr) fills lse[(b*H + h)*Nq + i].
/// Softmax scale 1/sqrt(D). With kv_lens, sequence b sees only its first kv_lengths(s)[b] keys (k
/// and v still hold kv_len rows). A packed batch (seqlens): q, k, v and O hold each sequence's own
/// rows one after another (row_offset), and lse is [H, total queries].
std::vector<double> attention_fp64(const problem& s, const std::vector<float>& q,
                                   const std::vector<float>& k, const std::vector<float>& v,
                                   std::vector<double>* lse = nullptr);

}  // namespace attn
