// The median's noise (a distribution-free 95% confidence interval) and the stopping rule, against
// exact order statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "run/noise.hpp"

namespace attn {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

TEST(median_ci_ranks, match_the_binomial_table) {
  // n/2 -+ 1.96 sqrt(n)/2, the upper one plus 1, rounded: the textbook ranks for 95%.
  EXPECT_EQ(median_ci_ranks(20).lower, 6);
  EXPECT_EQ(median_ci_ranks(20).upper, 15);
  EXPECT_EQ(median_ci_ranks(100).lower, 40);
  EXPECT_EQ(median_ci_ranks(100).upper, 61);
  EXPECT_EQ(median_ci_ranks(6).lower, 1);
  EXPECT_EQ(median_ci_ranks(6).upper, 6);
  // Too few samples for any interval but the whole range.
  EXPECT_EQ(median_ci_ranks(5).lower, 1);
  EXPECT_EQ(median_ci_ranks(5).upper, 5);
  EXPECT_EQ(median_ci_ranks(1).upper, 1);
}

TEST(relative_median_noise, exact_values) {
  // 1..20: median 10.5, interval [x6, x15] = [6, 15]: half-width 4.5.
  EXPECT_DOUBLE_EQ(relative_median_noise(one_to(20)), 4.5 / 10.5);
  EXPECT_DOUBLE_EQ(relative_median_noise(std::vector<double>(30, 2.0)), 0.0);
  EXPECT_DOUBLE_EQ(relative_median_noise({0.0, 0.0, 0.0}), 0.0);  // no division by a zero median
  EXPECT_THROW(relative_median_noise({}), std::invalid_argument);
}

TEST(relative_median_noise, covers_the_true_median_about_95_percent_of_the_time) {
  std::mt19937_64 generator(7);
  std::uniform_real_distribution<double> uniform(1.0, 2.0);  // true median 1.5
  int covered = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(60);
    for (double& x : v) x = uniform(generator);
    std::sort(v.begin(), v.end());
    const rank_pair r = median_ci_ranks(60);
    covered += v[r.lower - 1] <= 1.5 && 1.5 <= v[r.upper - 1];
  }
  EXPECT_GT(covered, 0.93 * trials);
  EXPECT_LT(covered, 0.98 * trials);
}

TEST(enough_samples, stops_as_soon_as_the_median_is_precise) {
  stopping_rule rule;
  rule.min_reps = 20;
  rule.max_noise = 0.01;
  const std::vector<double> steady(20, 1.0);
  EXPECT_FALSE(enough_samples(std::vector<double>(19, 1.0), 19, rule));  // min_reps first
  EXPECT_TRUE(enough_samples(steady, 20, rule));
  rule.min_total_ms = 50;  // a floor: not before 50 ms however steady
  EXPECT_FALSE(enough_samples(steady, 20, rule));
  EXPECT_TRUE(enough_samples(std::vector<double>(50, 1.0), 50, rule));
}

TEST(enough_samples, a_noisy_variant_stops_at_the_time_cap_or_max_reps) {
  stopping_rule rule;
  rule.min_reps = 20;
  rule.max_reps = 300;
  rule.max_total_ms = 250;
  rule.max_noise = 0.01;
  std::vector<double> noisy;
  for (int i = 0; i < 40; ++i) noisy.push_back(i % 2 ? 1.0 : 2.0);  // noise far above 1%
  EXPECT_FALSE(enough_samples(noisy, 60, rule));
  EXPECT_TRUE(enough_samples(noisy, 250, rule));
  rule.max_reps = 40;
  EXPECT_TRUE(enough_samples(noisy, 60, rule));
  // max_noise 0: only the caps stop (today's fixed-time rule).
  rule.max_reps = 300;
  rule.max_noise = 0;
  EXPECT_FALSE(enough_samples(std::vector<double>(40, 1.0), 40, rule));
  EXPECT_TRUE(enough_samples(std::vector<double>(40, 1.0), 250, rule));
}

TEST(enough_samples, the_noise_just_inside_and_just_outside_the_target) {
  // 1..20 shifted to 1000..1019: median 1009.5, half-width 4.5: noise 0.4458%.
  std::vector<double> v;
  for (int i = 0; i < 20; ++i) v.push_back(1000 + i);
  stopping_rule rule;
  rule.min_reps = 20;
  rule.max_noise = 4.5 / 1009.5;
  EXPECT_TRUE(enough_samples(v, 1, rule));
  rule.max_noise = 4.5 / 1009.5 * 0.999;
  EXPECT_FALSE(enough_samples(v, 1, rule));
}

}  // namespace
}  // namespace attn
