#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "run/stats.hpp"

TEST(Quantile, OddCount) {
  const std::vector<double> x{1, 2, 3, 4, 5};
  EXPECT_EQ(attn::quantile(x, 0.0), 1);
  EXPECT_EQ(attn::quantile(x, 0.25), 2);
  EXPECT_EQ(attn::quantile(x, 0.5), 3);
  EXPECT_EQ(attn::quantile(x, 0.75), 4);
  EXPECT_EQ(attn::quantile(x, 1.0), 5);
  EXPECT_DOUBLE_EQ(attn::quantile(x, 0.1), 1.4);  // position 0.4
  EXPECT_DOUBLE_EQ(attn::quantile(x, 0.9), 4.6);  // position 3.6
}

TEST(Quantile, EvenCountInterpolatesLikeNumpy) {
  const std::vector<double> x{1, 2, 3, 4};
  EXPECT_EQ(attn::quantile(x, 0.5), 2.5);    // position 1.5
  EXPECT_EQ(attn::quantile(x, 0.25), 1.75);  // position 0.75
  EXPECT_EQ(attn::quantile(x, 0.75), 3.25);  // position 2.25
  EXPECT_EQ(attn::quantile(x, 1.0), 4);
}

TEST(Quantile, UnevenSpacing) {
  const std::vector<double> x{0, 10, 100};
  EXPECT_EQ(attn::quantile(x, 0.75), 55);  // halfway from 10 to 100
  EXPECT_EQ(attn::quantile(x, 0.25), 5);
}

TEST(Quantile, SingleSample) {
  const std::vector<double> x{7.5};
  EXPECT_EQ(attn::quantile(x, 0.0), 7.5);
  EXPECT_EQ(attn::quantile(x, 0.5), 7.5);
  EXPECT_EQ(attn::quantile(x, 1.0), 7.5);
}

TEST(Quantile, RejectsEmptyAndOutOfRange) {
  EXPECT_THROW(attn::quantile({}, 0.5), std::invalid_argument);
  EXPECT_THROW(attn::quantile({1, 2}, -0.1), std::invalid_argument);
  EXPECT_THROW(attn::quantile({1, 2}, 1.1), std::invalid_argument);
  EXPECT_THROW(attn::quantile({1, 2}, std::nan("")), std::invalid_argument);
}

TEST(Summarize, OddUnsorted) {
  attn::summary s = attn::summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.q1, 2);
  EXPECT_EQ(s.q3, 4);
  EXPECT_EQ(s.iqr, 2);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
}

TEST(Summarize, EvenUnsorted) {
  attn::summary s = attn::summarize({40, 10, 30, 20});
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.median, 25);
  EXPECT_EQ(s.q1, 17.5);
  EXPECT_EQ(s.q3, 32.5);
  EXPECT_EQ(s.iqr, 15);
  EXPECT_EQ(s.min, 10);
  EXPECT_EQ(s.max, 40);
}

TEST(Summarize, WithTiesAndOutlier) {
  attn::summary s = attn::summarize({2, 9, 2, 2});
  EXPECT_EQ(s.median, 2);
  EXPECT_EQ(s.q1, 2);
  EXPECT_EQ(s.q3, 3.75);  // position 2.25: 2 + 0.25 * (9 - 2)
  EXPECT_EQ(s.iqr, 1.75);
  EXPECT_EQ(s.max, 9);
}

TEST(Summarize, OneSample) {
  attn::summary s = attn::summarize({0.125});
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.median, 0.125);
  EXPECT_EQ(s.q1, 0.125);
  EXPECT_EQ(s.q3, 0.125);
  EXPECT_EQ(s.iqr, 0);
  EXPECT_EQ(s.min, 0.125);
  EXPECT_EQ(s.max, 0.125);
}

TEST(Summarize, EmptyThrows) { EXPECT_THROW(attn::summarize({}), std::invalid_argument); }

TEST(Summarize, NanThrows) {
  EXPECT_THROW(attn::summarize({1, std::numeric_limits<double>::quiet_NaN(), 3}),
               std::invalid_argument);
}
