#include "verify/cpu_gradients.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "verify/cpu_reference.hpp"

namespace attn {
namespace {

template <class A, class B>
double dot(const A* a, const B* b, int64_t n) {
  double sum = 0;
  for (int64_t e = 0; e < n; ++e) sum += static_cast<double>(a[e]) * static_cast<double>(b[e]);
  return sum;
}

// What the reference does not take yet: each names its field.
void refuse_unsupported(const problem& s) {
  const auto refuse = [](const std::string& field, const std::string& value) {
    throw invalid_input(field + " " + value + ": not supported by the gradient reference yet");
  };
  if (has_kv_lens(s)) refuse("kv_lens", "'" + s.kv_lens + "'");
  if (!s.kv_seqlens.empty() && !is_varlen(s)) refuse("kv_seqlens", "'" + s.kv_seqlens + "' (without seqlens)");
  if (s.page_size != 0) refuse("page_size", std::to_string(s.page_size));
}

void check_sizes(const problem& s, const std::vector<float>& q, const std::vector<float>& k,
                 const std::vector<float>& v, const std::vector<float>& d_o) {
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.q_len <= 0 || s.kv_len <= 0 || s.head_dim <= 0 ||
      s.heads % s.kv_heads != 0) {
    throw std::invalid_argument("attention_gradients_fp64: bad shape " + describe(s));
  }
  const auto d = static_cast<size_t>(s.head_dim), dv = static_cast<size_t>(value_dim(s));
  const auto q_count = static_cast<size_t>(q_rows(s) * s.heads), kv_count = static_cast<size_t>(kv_rows(s) * s.kv_heads);
  if (q.size() != q_count * d || k.size() != kv_count * d || v.size() != kv_count * dv || d_o.size() != q_count * dv) {
    throw std::invalid_argument("attention_gradients_fp64: input sizes do not match " + describe(s));
  }
}

}  // namespace

gradients_fp64 attention_gradients_fp64(const problem& s, const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const std::vector<float>& d_o) {
  refuse_unsupported(s);
  check_sizes(s, q, k, v, d_o);
  const int64_t d = s.head_dim, dv = value_dim(s), group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d)), cap = s.softcap;

  gradients_fp64 g;
  g.dq.assign(q.size(), 0.0);
  g.dk.assign(k.size(), 0.0);
  g.dv.assign(v.size(), 0.0);
  g.o.assign(d_o.size(), 0.0);
  const int64_t q_count = q_rows(s);
  g.lse.assign(static_cast<size_t>(q_count * s.heads), -std::numeric_limits<double>::infinity());

  // Each sequence's own lengths and (a packed batch) first rows.
  const std::vector<int64_t> q_lens = q_lengths(s), kv_lens = kv_lengths(s);
  const std::vector<int64_t> q_starts = cumulative_lengths(q_lens), kv_starts = cumulative_lengths(kv_lens);
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t q_len = q_lens[static_cast<size_t>(b)], kv_len = kv_lens[static_cast<size_t>(b)];
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kv_head = h / group;  // the query heads of one group share it (GQA, MQA)
      const auto k_at = [&](int64_t j) { return row_offset(s, true, d, b, kv_head, j, kv_starts); };
      const auto v_at = [&](int64_t j) { return row_offset(s, true, dv, b, kv_head, j, kv_starts); };
      for (int64_t i = 0; i < q_len; ++i) {
        const int64_t q_at = row_offset(s, false, d, b, h, i, q_starts);
        const int64_t o_at = row_offset(s, false, dv, b, h, i, q_starts);
        const int64_t first = std::max<int64_t>(first_visible_key(s, i, q_len, kv_len), 0);
        const int64_t end = std::min(last_visible_key(s, i, q_len, kv_len), kv_len - 1) + 1;
        // A row that sees no key: O and every gradient it feeds stay zero, its LSE -inf.
        if (end <= first) continue;

        // The forward for this row. raw: the scaled q.k; score: after softcap.
        std::vector<double> raw(static_cast<size_t>(end - first)), score(raw.size()), p(raw.size());
        for (int64_t j = first; j < end; ++j) {
          raw[j - first] = scale * dot(&q[q_at], &k[k_at(j)], d);
          score[j - first] = cap > 0 ? cap * std::tanh(raw[j - first] / cap) : raw[j - first];
        }
        const double row_max = *std::max_element(score.begin(), score.end());
        double sum = 0;
        for (const double x : score) sum += std::exp(x - row_max);
        const double lse = row_max + std::log(sum);
        // [B, H, Nq]; a packed batch's [H, total queries], as attention_fp64's.
        const int64_t lse_at = is_varlen(s) ? h * q_count + q_starts[static_cast<size_t>(b)] + i
                                            : (b * s.heads + h) * s.q_len + i;
        g.lse[static_cast<size_t>(lse_at)] = lse;
        double* o = &g.o[o_at];
        for (int64_t j = first; j < end; ++j) {
          p[j - first] = std::exp(score[j - first] - lse);
          for (int64_t e = 0; e < dv; ++e) o[e] += p[j - first] * v[v_at(j) + e];
        }

        // The backward: D_i = dO_i.O_i; dS_ij = P_ij (dO_i.V_j - D_i), times the cap's derivative
        // 1 - tanh^2(raw / cap); dQ_i = scale sum_j dS_ij K_j, dK_j += scale dS_ij Q_i, dV_j += P_ij dO_i.
        const float* d_out = &d_o[o_at];
        const double row_d = dot(d_out, o, dv);
        for (int64_t j = first; j < end; ++j) {
          double ds = p[j - first] * (dot(d_out, &v[v_at(j)], dv) - row_d);
          if (cap > 0) {
            const double t = std::tanh(raw[j - first] / cap);
            ds *= 1 - t * t;
          }
          for (int64_t e = 0; e < d; ++e) {
            g.dq[q_at + e] += scale * ds * k[k_at(j) + e];
            g.dk[k_at(j) + e] += scale * ds * q[q_at + e];
          }
          for (int64_t e = 0; e < dv; ++e) g.dv[v_at(j) + e] += p[j - first] * d_out[e];
        }
      }
    }
  }
  return g;
}

}  // namespace attn
