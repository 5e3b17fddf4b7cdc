#include <gtest/gtest.h>

#include <limits>

#include "verify/tolerance.hpp"

namespace {
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(AllowedError, TwiceNaivePlusFloor) {
  EXPECT_EQ(attn::error_floor, 1e-4);
  EXPECT_DOUBLE_EQ(attn::allowed_error(0.01), 0.0201);
  EXPECT_DOUBLE_EQ(attn::allowed_error(0.01, 0.0), 0.02);
  EXPECT_DOUBLE_EQ(attn::allowed_error(0.25, 0.5), 1.0);
  EXPECT_EQ(attn::allowed_error(0.0), 1e-4);
}

TEST(WithinTolerance, BoundaryIsInclusive) {
  const double allowed = attn::allowed_error(0.01);
  EXPECT_TRUE(attn::within_tolerance(allowed, allowed));
  EXPECT_TRUE(attn::within_tolerance(0.0, allowed));
  EXPECT_TRUE(attn::within_tolerance(0.02, allowed));
  EXPECT_FALSE(attn::within_tolerance(0.0202, allowed));
  EXPECT_FALSE(attn::within_tolerance(1.0, allowed));
}

TEST(WithinTolerance, NanAndInfinityNeverPass) {
  EXPECT_FALSE(attn::within_tolerance(nan, 1.0));
  EXPECT_FALSE(attn::within_tolerance(nan, inf));
  EXPECT_FALSE(attn::within_tolerance(inf, 1.0));
  EXPECT_FALSE(attn::within_tolerance(inf, inf));
  EXPECT_FALSE(attn::within_tolerance(-inf, 1.0));
  // A NaN naive error makes the bound NaN, which must not let anything through.
  EXPECT_FALSE(attn::within_tolerance(0.0, attn::allowed_error(nan)));
}
