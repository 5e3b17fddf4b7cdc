#include "verify/row_sample.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/numeric.hpp"
#include "verify/cpu_reference.hpp"
#include "verify/tolerance.hpp"

namespace attn {

std::vector<cpu_sample> cpu_samples(const device_runtime& rt, const device_problem& pr, int count, uint64_t seed) {
  const problem& s = pr.shp;
  const auto q = to_host<uint16_t>(rt, pr.q), k = to_host<uint16_t>(rt, pr.k), v = to_host<uint16_t>(rt, pr.v);
  std::mt19937_64 rng(seed ^ 0x5eed);
  const std::vector<int64_t> lengths = kv_lengths(s), q_lens = q_lengths(s);
  const std::vector<int64_t> q_starts = cumulative_lengths(q_lens), kv_starts = cumulative_lengths(lengths);
  // Rows of sequences that have one (a packed batch's may have none): the first and last row, then random ones.
  std::vector<int64_t> nonempty;
  for (int64_t b = 0; b < s.batch; ++b)
    if (q_lens[static_cast<size_t>(b)] > 0) nonempty.push_back(b);
  std::vector<cpu_sample> samples;
  if (!nonempty.empty()) {
    samples.push_back({nonempty.front(), 0, 0, {}, 0});
    samples.push_back({nonempty.back(), s.heads - 1, q_lens[static_cast<size_t>(nonempty.back())] - 1, {}, 0});
    while (static_cast<int>(samples.size()) < count) {
      const int64_t b = nonempty[rng() % nonempty.size()];
      samples.push_back({b, static_cast<int64_t>(rng() % s.heads),
                         static_cast<int64_t>(rng() % static_cast<uint64_t>(q_lens[static_cast<size_t>(b)])), {}, 0});
    }
  }
  const int64_t d = s.head_dim, dv = value_dim(s);
  for (auto& smp : samples) {
    const int64_t kvh = smp.h / (s.heads / s.kv_heads), kv_len = lengths[static_cast<size_t>(smp.b)];
    const int64_t q_len = q_lens[static_cast<size_t>(smp.b)];
    std::vector<float> qf(d), kf(kv_len * d), vf(kv_len * dv);
    const int64_t q0 = row_offset(s, false, d, smp.b, smp.h, smp.i, q_starts);
    for (int64_t x = 0; x < d; ++x) qf[x] = elem_to_float(s.dtype, q[q0 + x]);
    for (int64_t j = 0; j < kv_len; ++j) {
      const int64_t k0 = row_offset(s, true, d, smp.b, kvh, j, kv_starts);
      const int64_t v0 = row_offset(s, true, dv, smp.b, kvh, j, kv_starts);
      for (int64_t x = 0; x < d; ++x) kf[j * d + x] = elem_to_float(s.dtype, k[k0 + x]);
      for (int64_t x = 0; x < dv; ++x) vf[j * dv + x] = elem_to_float(s.dtype, v[v0 + x]);
    }
    smp.out.resize(dv);
    attention_row_fp64(qf.data(), kf.data(), vf.data(), kv_len, d, dv, d, dv, 1.0 / std::sqrt(double(d)),
                       first_visible_key(s, smp.i, q_len, kv_len), last_visible_key(s, smp.i, q_len, kv_len),
                       s.softcap, smp.out.data(), &smp.lse);
  }
  return samples;
}

double cpu_sample_error(const device_runtime& rt, const device_problem& pr, const std::vector<cpu_sample>& samples) {
  const problem& s = pr.shp;
  const int64_t d = value_dim(s);  // O's rows
  double worst = 0;
  std::vector<uint16_t> row(d);
  const std::vector<int64_t> q_starts = cumulative_lengths(q_lengths(s));
  for (const auto& smp : samples) {
    const int64_t o0 = row_offset(s, false, d, smp.b, smp.h, smp.i, q_starts);
    rt.copy_to_host(row.data(), pr.o.as<uint16_t>() + o0, d * 2);
    float lse = 0;
    const int64_t lse_at = is_varlen(s) ? smp.h * q_starts.back() + q_starts[static_cast<size_t>(smp.b)] + smp.i
                                        : (smp.b * s.heads + smp.h) * s.q_len + smp.i;
    rt.copy_to_host(&lse, pr.lse.as<float>() + lse_at, sizeof lse);
    for (int64_t x = 0; x < d; ++x) {
      const double e = std::fabs(elem_to_float(s.dtype, row[x]) - smp.out[x]);
      if (!std::isfinite(e)) return NAN;
      worst = std::max(worst, e);
    }
    const bool both_empty = std::isinf(smp.lse) && std::isinf(lse) && smp.lse < 0 && lse < 0;
    if (!both_empty && !(std::fabs(lse - smp.lse) <= lse_tolerance)) return NAN;
  }
  return worst;
}

}  // namespace attn
