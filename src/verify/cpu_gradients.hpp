#pragma once
// Attention's backward pass in float64 on the CPU: the ground truth for the backward kernels
// (issue 22), as cpu_reference.hpp is the forward's.
#include <vector>

#include "core/problem.hpp"

namespace attn {

/// Gradients of O = attention(Q, K, V) under problem s, given dO, in float64: dq in Q's layout and
/// shape, dk and dv in K's and V's (kv_heads heads: a K/V head's gradient is the sum over the query
/// heads of its group). Also returns the forward's O (in Q's layout with value_dim(s)) and LSE
/// ([B, H, Nq], a packed batch's [H, total queries]; natural log, -inf for a row that sees no key).
struct gradients_fp64 {
  std::vector<double> dq, dk, dv, o, lse;
};

/// Tensors as attention_fp64 takes them (element_offset(s.layout, ...); V, O and dO have rows of
/// value_dim(s)). Softmax scale 1/sqrt(head_dim); the causal mask (bottom-right), a sliding window
/// and softcap as the forward has them; a packed batch (seqlens, kv_seqlens: each sequence's rows one
/// after another, row_offset). A row that sees no key has zero O and gradients. Throws invalid_input
/// naming the field for kv_lens or page_size (not supported yet), and std::invalid_argument for a
/// shape or tensor sizes that do not fit.
gradients_fp64 attention_gradients_fp64(const problem& s, const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const std::vector<float>& d_o);

}  // namespace attn
