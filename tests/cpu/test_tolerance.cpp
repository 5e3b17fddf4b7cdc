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

TEST(Acceptance, TheTighterBoundDecides) {
  EXPECT_EQ(attn::rounding_multiple, 4);
  // Standard-normal inputs: the naive run's error is close to the output's own rounding.
  const auto normal = attn::acceptance_for(3e-3, 2e-3);
  EXPECT_DOUBLE_EQ(normal.naive_bound, 6.1e-3);
  EXPECT_DOUBLE_EQ(normal.rounding_bound, 8.1e-3);
  EXPECT_DOUBLE_EQ(normal.allowed, 6.1e-3);
  EXPECT_EQ(normal.decided_by, attn::error_bound::naive);
  // Large logits (issue 11, item 14: naive error 0.525 where the kernels' was 0.017): the bound
  // stays a small multiple of the output's rounding.
  const auto wide = attn::acceptance_for(0.525, 0.008);
  EXPECT_DOUBLE_EQ(wide.naive_bound, 1.0501);
  EXPECT_DOUBLE_EQ(wide.rounding_bound, 0.0321);
  EXPECT_DOUBLE_EQ(wide.allowed, 0.0321);
  EXPECT_EQ(wide.decided_by, attn::error_bound::rounding);
  EXPECT_FALSE(attn::within_tolerance(0.05, wide.allowed));
  EXPECT_TRUE(attn::within_tolerance(0.017, wide.allowed));
  EXPECT_EQ(attn::to_string(attn::error_bound::naive), "naive");
  EXPECT_EQ(attn::to_string(attn::error_bound::rounding), "rounding");
}

TEST(Acceptance, NanInEitherErrorLetsNothingPass) {
  EXPECT_FALSE(attn::within_tolerance(0.0, attn::acceptance_for(nan, 1e-3).allowed));
  EXPECT_FALSE(attn::within_tolerance(0.0, attn::acceptance_for(1e-3, nan).allowed));
}

TEST(Acceptance, DescriptionNamesTheDecidingBound) {
  EXPECT_EQ(attn::describe(attn::acceptance_for(0.525, 0.008)),
            "the rounding bound decides: 4 x rounding error 8.000e-03 + 1e-04 = 3.210e-02 (the naive bound: 2 x "
            "naive error 5.250e-01 + 1e-04 = 1.050e+00)");
  EXPECT_EQ(attn::describe(attn::acceptance_for(3e-3, 2e-3)),
            "the naive bound decides: 2 x naive error 3.000e-03 + 1e-04 = 6.100e-03 (the rounding bound: 4 x "
            "rounding error 2.000e-03 + 1e-04 = 8.100e-03)");
}
