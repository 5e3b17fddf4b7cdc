#include "run/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attn {

double quantile(const std::vector<double>& sorted, double q) {
  // Cheap to check, and an out-of-range index here would read past the vector.
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample");
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("quantile: q outside [0, 1]");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

summary summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  // A NaN breaks std::sort's ordering and would make every statistic meaningless.
  if (std::any_of(samples.begin(), samples.end(), [](double x) { return std::isnan(x); })) {
    throw std::invalid_argument("summarize: sample contains NaN");
  }
  std::sort(samples.begin(), samples.end());
  summary s;
  s.count = static_cast<int>(samples.size());
  s.median = quantile(samples, 0.5);
  s.q1 = quantile(samples, 0.25);
  s.q3 = quantile(samples, 0.75);
  s.iqr = s.q3 - s.q1;
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

}  // namespace attn
