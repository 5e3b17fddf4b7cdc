#include "run/noise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attn {

rank_pair median_ci_ranks(int n) {
  if (n < 6) return {1, std::max(n, 1)};
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2;
  const int lower = static_cast<int>(std::lround(n / 2.0 - half));
  const int upper = static_cast<int>(std::lround(n / 2.0 + half + 1));
  return {std::clamp(lower, 1, n), std::clamp(upper, 1, n)};
}

double relative_median_noise(const std::vector<double>& sorted) {
  if (sorted.empty()) throw std::invalid_argument("relative_median_noise of an empty sample");
  const int n = static_cast<int>(sorted.size());
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  if (median == 0) return 0;
  const rank_pair r = median_ci_ranks(n);
  return (sorted[r.upper - 1] - sorted[r.lower - 1]) / 2 / std::fabs(median);
}

bool enough_samples(const std::vector<double>& samples, double total_ms, const stopping_rule& rule) {
  const int n = static_cast<int>(samples.size());
  if (n >= rule.max_reps) return true;
  if (n < rule.min_reps || total_ms < rule.min_total_ms || n == 0) return false;
  if (total_ms >= rule.max_total_ms) return true;
  if (!(rule.max_noise > 0)) return false;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  return relative_median_noise(sorted) <= rule.max_noise;
}

}  // namespace attn
