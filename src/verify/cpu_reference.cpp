#include "verify/cpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attn {

void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len,
                        int64_t kv_row_stride, int64_t head_dim, double scale, int64_t last_key,
                        double* out, double* lse) {
  attention_row_fp64(q, k, v, kv_len, kv_row_stride, head_dim, scale, 0, last_key, 0.0, out, lse);
}

void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len,
                        int64_t kv_row_stride, int64_t head_dim, double scale, int64_t first_key,
                        int64_t last_key, double softcap, double* out, double* lse) {
  attention_row_fp64(q, k, v, kv_len, kv_row_stride, kv_row_stride, head_dim, head_dim, scale, first_key, last_key,
                     softcap, out, lse);
}

void attention_row_fp64(const float* q, const float* k, const float* v, int64_t kv_len, int64_t k_row_stride,
                        int64_t v_row_stride, int64_t head_dim, int64_t head_dim_v, double scale, int64_t first_key,
                        int64_t last_key, double softcap, double* out, double* lse) {
  std::fill(out, out + head_dim_v, 0.0);
  const int64_t first = std::max<int64_t>(first_key, 0), end = std::min(last_key, kv_len - 1) + 1;
  if (end <= first) {
    // A fully masked row has an empty softmax: define it as zero output, as the kernels do.
    if (lse != nullptr) *lse = -std::numeric_limits<double>::infinity();
    return;
  }

  std::vector<double> scores(static_cast<size_t>(end - first));
  for (int64_t j = first; j < end; ++j) {
    const float* key = k + j * k_row_stride;
    double dot = 0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * key[d];
    const double s = scale * dot;
    scores[j - first] = softcap > 0 ? softcap * std::tanh(s / softcap) : s;
  }

  // Subtracting the max keeps every exp() <= 1, so large logits cannot overflow.
  const double row_max = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (int64_t j = first; j < end; ++j) {
    const double p = std::exp(scores[j - first] - row_max);
    sum += p;
    const float* value = v + j * v_row_stride;
    for (int64_t d = 0; d < head_dim_v; ++d) out[d] += p * value[d];
  }
  for (int64_t d = 0; d < head_dim_v; ++d) out[d] /= sum;
  if (lse != nullptr) *lse = row_max + std::log(sum);
}

int64_t last_visible_key(const problem& s, int64_t query_row) {
  return last_visible_key(s, query_row, s.kv_len);
}

int64_t last_visible_key(const problem& s, int64_t query_row, int64_t kv_len) {
  return last_visible_key(s, query_row, s.q_len, kv_len);
}

int64_t last_visible_key(const problem& s, int64_t query_row, int64_t q_len, int64_t kv_len) {
  const int64_t diagonal = query_row + kv_len - q_len;
  if (s.causal) return diagonal;
  return s.window_right >= 0 ? std::min(kv_len - 1, diagonal + s.window_right) : kv_len - 1;
}

int64_t first_visible_key(const problem& s, int64_t query_row, int64_t kv_len) {
  return first_visible_key(s, query_row, s.q_len, kv_len);
}

int64_t first_visible_key(const problem& s, int64_t query_row, int64_t q_len, int64_t kv_len) {
  return s.window_left >= 0 ? std::max<int64_t>(0, query_row + kv_len - q_len - s.window_left) : 0;
}

std::vector<double> attention_fp64(const problem& s, const std::vector<float>& q,
                                   const std::vector<float>& k, const std::vector<float>& v,
                                   std::vector<double>* lse) {
  // No validate(): the reference also serves tiny hand-checked shapes the kernels never take.
  // Only what would make the indexing below wrong is checked.
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.q_len <= 0 || s.kv_len <= 0 ||
      s.head_dim <= 0 || s.heads % s.kv_heads != 0) {
    throw std::invalid_argument("attention_fp64: bad shape " + describe(s));
  }
  const int64_t d = s.head_dim, dv = value_dim(s);
  const int64_t q_count = q_rows(s), kv_count = kv_rows(s);  // rows of every sequence (packed or not)
  const auto q_size = static_cast<size_t>(q_count * s.heads * d);
  const auto kv_size = static_cast<size_t>(kv_count * s.kv_heads * d);
  const auto v_size = static_cast<size_t>(kv_count * s.kv_heads * dv);
  if (q.size() != q_size || k.size() != kv_size || v.size() != v_size) {
    throw std::invalid_argument("attention_fp64: input sizes do not match " + describe(s));
  }

  const int64_t group = s.heads / s.kv_heads;
  // Consecutive keys of one head are D apart in bhsd and a whole row of heads apart in bshd.
  const int64_t kv_row_stride = s.layout == layout::bhsd ? d : s.kv_heads * d;
  const int64_t v_row_stride = s.layout == layout::bhsd ? dv : s.kv_heads * dv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));

  std::vector<double> out(static_cast<size_t>(q_count * s.heads * dv));
  if (lse != nullptr) lse->assign(static_cast<size_t>(q_count * s.heads), 0.0);
  const std::vector<int64_t> lengths = kv_lengths(s), q_lens = q_lengths(s);
  // A packed batch: sequence b's rows start at q_starts[b] (Q, O, the LSE) and kv_starts[b] (K, V).
  const std::vector<int64_t> q_starts = cumulative_lengths(q_lens), kv_starts = cumulative_lengths(lengths);
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t kv_len = lengths[static_cast<size_t>(b)], q_len = q_lens[static_cast<size_t>(b)];
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kv_base = row_offset(s, true, d, b, h / group, 0, kv_starts);
      const int64_t v_base = row_offset(s, true, dv, b, h / group, 0, kv_starts);
      for (int64_t i = 0; i < q_len; ++i) {
        const int64_t q_at = row_offset(s, false, d, b, h, i, q_starts);
        const int64_t o_at = row_offset(s, false, dv, b, h, i, q_starts);
        // [B, H, Nq]; a packed batch's [H, total queries] (flash_attn_varlen_func's softmax_lse).
        const int64_t lse_at = is_varlen(s) ? h * q_count + q_starts[static_cast<size_t>(b)] + i
                                            : (b * s.heads + h) * s.q_len + i;
        double* row_lse = lse != nullptr ? &(*lse)[static_cast<size_t>(lse_at)] : nullptr;
        attention_row_fp64(&q[q_at], &k[kv_base], &v[v_base], kv_len, kv_row_stride, v_row_stride, d, dv, scale,
                           first_visible_key(s, i, q_len, kv_len), last_visible_key(s, i, q_len, kv_len), s.softcap,
                           &out[o_at], row_lse);
      }
    }
  }
  return out;
}

}  // namespace attn
