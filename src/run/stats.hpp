#pragma once
// Statistics over repeated timings: free functions over plain values.
#include <vector>

namespace attn {

struct summary {
  int count = 0;
  double median = 0, q1 = 0, q3 = 0, iqr = 0, min = 0, max = 0;
  double noise = 0;  ///< relative_median_noise (run/noise.hpp), set by time_kernel
};

/// Quantile with linear interpolation between order statistics (numpy's default).
/// `sorted` must be sorted ascending and non-empty; q in [0, 1].
double quantile(const std::vector<double>& sorted, double q);
/// Throws std::invalid_argument on an empty sample.
summary summarize(std::vector<double> samples);

}  // namespace attn
