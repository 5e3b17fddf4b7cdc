#pragma once
// The one place the kernels' fwd_params (and the backward's bwd_params) are built: from the problem and the tensors' pointers and
// strides, checked (invalid_input naming the bad value). The tool's verification and timing and
// the library's forward all go through make_fwd_params; a family's own parameter (the hopper
// family's) is built from it by the family's plan_launch (codegen/family.hpp).
#include <utility>
#include <cstdint>

#include "common/bwd_params.cuh"  // kernels/common, shared with the device code
#include "common/params.cuh"
#include "core/problem.hpp"

namespace attn {

struct forward_tensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  /// Split-KV's workspace (split_workspace_floats): its counters, zeroed when it is made
  /// (zero_split_counters), then the partial O and LSE; nullptr when no variant splits.
  float* workspace = nullptr;
  int64_t workspace_floats = 0;
  /// Each sequence's K/V length, int32 [B]: required when the problem has kv_lens.
  const int* seqlens_k = nullptr;
  /// A paged cache's page table, int32 [B, pages_per_sequence]: required when page_size > 0; K and
  /// V then hold num_pages pages of [page_size, kv_heads, D].
  const int* block_table = nullptr;
  int64_t num_pages = 0;
  /// A packed batch's cumulative offsets, int32 [B + 1] each (cu_seqlens_q, cu_seqlens_k): required
  /// when the problem has seqlens. Q, O (and the LSE, [H, total_q]) hold total_q rows, K and V
  /// total_kv: q_rows(s) and kv_rows(s), or the caller's when the lengths are "given".
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  int64_t total_q = 0, total_kv = 0;
};

/// The floats split-KV over `splits` blocks needs: attn_k::SPLIT_COUNTERS counters (4 bytes each),
/// then a partial O and an LSE per split and row; 0 for splits <= 1.
int64_t split_workspace_floats(const problem& s, int splits);
/// The bytes at the start of a split-KV workspace that must be 0 before its first launch (the
/// kernels leave them 0 after each).
int64_t split_counter_bytes();

/// Batch, head and row strides in elements; all three 0 means contiguous in s.layout.
struct tensor_strides {
  int64_t batch = 0, head = 0, row = 0;
  bool unset() const { return batch == 0 && head == 0 && row == 0; }
  bool operator==(const tensor_strides&) const = default;
};

/// The contiguous strides of Q/O (kv = false) or K/V (kv = true) in s.layout; a paged cache's K/V:
/// page, head and row strides of [pages, page_size, kv_heads, D]; a packed batch's: batch stride 0
/// and the rows of every sequence (q_rows, kv_rows) as one.
/// The window's sides as the kernels take them (fwd_params' and bwd_params' window_left and
/// window_right): -1 for a side that limits nothing, and a right side of 0 when causal.
std::pair<int, int> kernel_window(const problem& s);
tensor_strides contiguous_strides(const problem& s, bool kv);
/// The same for rows of `dim` elements: V's and O's with dim = value_dim(s).
tensor_strides contiguous_strides(const problem& s, bool kv, int64_t dim);
/// A packed batch's with `rows` rows in all (the caller's total when the lengths are "given").
tensor_strides packed_strides(const problem& s, bool kv, int64_t dim, int64_t rows);

/// Softcap's tanh as the hopper family's schedule bit 64 computes it: tanh(x) ~ x (c0 + c1 x^2 +
/// c2 x^4) for |x| < softcap_poly_x, a fit of the relative error (2.2e-4 at most there; tanh.approx.f32's
/// is 2^-11). Its coefficients, in fwd_params' softcap_poly, take C and the scale.
inline constexpr double softcap_tanh_poly[3] = {0.999786375, -0.326305017, 0.0973672351};
inline constexpr double softcap_poly_x = 0.75;
/// The shorter form where every |x| of a warp's scores is below softcap_poly3_x: x (c0 + c1 x^2),
/// within 2.2e-4 of tanh there too (NOTES V14).
inline constexpr double softcap_tanh_poly3[2] = {0.999787238, -0.318541102};
inline constexpr double softcap_poly3_x = 0.34;
/// Below which |x| = |s scale / C| the kernel takes the polynomial for softcap C: x_limit
/// (softcap_poly_x or softcap_poly3_x), less where the cap there, C tanh(x), would pass 32 (a
/// row's bound is then at most 2^92 above its max: NOTES V13).
double softcap_poly_limit(double softcap, double x_limit = softcap_poly_x);
/// The kernel's form (hopper_params' softcap_poly and softcap_fast_limit): for |s| < limit (raw
/// q.k units), s (c[0] + c[1] s^2 + c[2] s^4) is C tanh(s scale / C) times scale * log2(e); for
/// |s| < limit3, s (c3[0] + c3[1] s^2) is. All 0 without softcap.
struct softcap_polynomial {
  float coefficients[3] = {0, 0, 0};
  float limit = 0;
  float coefficients3[2] = {0, 0};
  float limit3 = 0;
};
softcap_polynomial softcap_poly_for(double softcap, double softmax_scale);

/// Bytes a kernel loads at once (cp.async, TMA): pointers and row strides must keep it aligned.
constexpr int64_t tensor_alignment = 16;
/// The alignment a problem's tensors need: 16 bytes, or one element's when the head dim is not a
/// multiple of 8 (rows of 33 or 59 elements are not 16-byte aligned; fa2 loads them by element).
inline int64_t tensor_alignment_of(const problem& s) {
  const int64_t per_load = tensor_alignment / element_size(s.dtype);  // fa2's ALIGNED: D % 8 == 0 (and dv)
  return s.head_dim % per_load == 0 && value_dim(s) % per_load == 0 ? tensor_alignment : element_size(s.dtype);
}

/// Checks sizes (validate(), and N_q, N_kv and heads within int), the pointers (none null; q, k,
/// v and o 16-byte aligned, lse 4; an element's alignment where D is not a multiple of 8:
/// tensor_alignment_of), the strides (positive multiples of 8 elements, or of 1, rows of at
/// least D), a paged cache's table and page count, kv_lens' lengths pointer, and the scale (0 = 1/sqrt(D), else finite and positive). Throws invalid_input.
/// V's and O's strides (unset: contiguous, rows of dv elements) are their own only when dv != d;
/// with dv = d they must be K's and Q's (unset or equal), which the kernels read for them then.
attn_k::fwd_params make_fwd_params(const problem& s, const forward_tensors& t, tensor_strides q_strides,
                                   tensor_strides kv_strides, float softmax_scale, tensor_strides v_strides = {},
                                   tensor_strides o_strides = {});

/// The tensors of one backward call. Q, O, dO and dQ have the problem's Q layout, K, V, dK and dV
/// its K/V layout (contiguous); lse and delta are [B, H, Nq] floats (delta is written).
struct backward_tensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* o = nullptr;
  const void* d_o = nullptr;
  const float* lse = nullptr;
  float* delta = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  /// fp32, [batch][head][query row][head dim]: the atomic-dQ variants' workspace (they zero it
  /// themselves); may be null for the others (run_backward refuses an atomic-dQ variant without it).
  float* dq_accum = nullptr;
  /// A packed batch (is_varlen): int32 [B + 1] offsets of each sequence's queries and keys, on the
  /// device, and the rows of Q and K; the LSE and delta are then [H, total_q].
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  int64_t total_q = 0, total_kv = 0;
};
/// Bytes of the atomic-dQ variants' fp32 workspace for s (backward_tensors' dq_accum).
inline int64_t dq_accum_bytes(const problem& s) { return s.batch * s.heads * s.q_len * s.head_dim * 4; }
/// The kernels' parameters, contiguous strides of s.layout; scale 0 = 1/sqrt(D). Throws
/// invalid_input for a null or misaligned pointer.
attn_k::bwd_params make_bwd_params(const problem& s, const backward_tensors& t, float softmax_scale = 0);

}  // namespace attn
