#pragma once
// How precisely a sample's median is known: the distribution-free 95% confidence interval of the
// median from order statistics, and the stopping rule that ends a variant's repetitions when it
// is narrow enough (or the time cap is reached).
#include <vector>

namespace attn {

/// 1-based ranks (lower, upper) of the order statistics that bound the median of n samples with
/// ~95% confidence: n/2 -+ 1.96*sqrt(n)/2 (the normal approximation of Binomial(n, 1/2)), the
/// upper one plus 1, rounded to the nearest rank and clamped to [1, n]. (1, n) for n < 6.
struct rank_pair {
  int lower = 1, upper = 1;
};
rank_pair median_ci_ranks(int n);

/// Half the width of that interval over the median, as a fraction (0.01 = 1%): the "noise" shown
/// beside each median. `sorted` ascending and non-empty; 0 when the median is 0.
double relative_median_noise(const std::vector<double>& sorted);

struct stopping_rule {
  int min_reps = 20;          ///< never stop before this many
  int max_reps = 300;         ///< never more
  double min_total_ms = 0;    ///< never stop before the timed kernels add up to this
  double max_total_ms = 250;  ///< stop once they add up to this, however noisy
  double max_noise = 0.01;    ///< stop once relative_median_noise <= this (0: only the caps stop)
};

/// True when repetitions should stop after `samples` (in the order measured) that add up to
/// total_ms: max_reps reached; or min_reps and min_total_ms reached and either the noise is within
/// max_noise or the time cap max_total_ms is reached.
bool enough_samples(const std::vector<double>& samples, double total_ms, const stopping_rule& rule);

}  // namespace attn
