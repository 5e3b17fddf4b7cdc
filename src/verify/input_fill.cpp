#include "verify/input_fill.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {

// Sink keys and their logits: the first key (as a BOS token), a weaker one a third in, and a
// stronger one two thirds in, so the row max jumps by about 10 mid-row for the rows that see it.
constexpr double sink_logits[attn_k::max_sink_rows] = {30, 20, 40};

}  // namespace

attn_k::input_fill input_fill_for(input_kind k, tensor_role t, const problem& s) {
  const bool query = t == tensor_role::q || t == tensor_role::d_o;
  // A packed batch's rows run on from one sequence to the next: its tensors are one sequence of them all.
  const int64_t heads = query ? s.heads : s.kv_heads;
  const int64_t len = is_varlen(s) ? std::max<int64_t>(1, query ? q_rows(s) : kv_rows(s)) : query ? s.q_len : s.kv_len;
  attn_k::input_fill f{};
  f.scale = 1;
  const int64_t d = t == tensor_role::v || t == tensor_role::d_o ? value_dim(s) : s.head_dim;  // V's and O's rows have dv
  f.row_elements = s.layout == layout::bhsd ? d : heads * d;
  f.rows = static_cast<int>(len);
  if (k == input_kind::wide && t != tensor_role::v && t != tensor_role::d_o) {
    // q.k / sqrt(D) has standard deviation 2 * 2 * (1 + 2 * j / (N - 1)) at key j: 4 to 12.
    f.scale = 2;
    if (t == tensor_role::k) f.ramp = 2;
  } else if (k == input_kind::sink && t == tensor_role::q) {
    f.offset = 1;  // every query has sqrt(D) along (1, ..., 1) / sqrt(D)
  } else if (k == input_kind::sink && t == tensor_role::k) {
    // A key of constant value c meets a query of offset 1 with logit c * (D + sqrt(D) z) / sqrt(D):
    // c sqrt(D) (the logit asked for) plus c z (a spread of 1/sqrt(D) of it).
    const int64_t rows[attn_k::max_sink_rows] = {0, len / 3, 2 * len / 3};
    for (int i = 0; i < attn_k::max_sink_rows; ++i) {
      bool seen = false;
      for (int j = 0; j < f.sinks; ++j) seen |= f.sink_row[j] == rows[i];
      if (seen) continue;
      f.sink_row[f.sinks] = static_cast<int>(rows[i]);
      f.sink_value[f.sinks] = static_cast<float>(sink_logits[i] / std::sqrt(static_cast<double>(s.head_dim)));
      ++f.sinks;
    }
  }
  return f;
}

}  // namespace attn
