#include "verify/tolerance.hpp"

#include <cmath>
#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace attn {

double allowed_error(double naive_low_precision_error, double floor) {
  return 2 * naive_low_precision_error + floor;
}

bool within_tolerance(double error, double allowed) {
  // Written so that a NaN on either side fails: NaN compares false with everything.
  return std::isfinite(error) && error <= allowed;
}

std::string to_string(error_bound b) { return b == error_bound::naive ? "naive" : "rounding"; }

acceptance acceptance_for(double naive_low_precision_error, double rounding_error, double floor) {
  acceptance a;
  a.naive_error = naive_low_precision_error;
  a.rounding_error = rounding_error;
  a.floor = floor;
  a.naive_bound = allowed_error(naive_low_precision_error, floor);
  a.rounding_bound = rounding_multiple * rounding_error + floor;
  a.decided_by = a.rounding_bound < a.naive_bound ? error_bound::rounding : error_bound::naive;
  a.allowed = std::isnan(a.naive_bound) || std::isnan(a.rounding_bound)
                  ? std::numeric_limits<double>::quiet_NaN()
                  : std::min(a.naive_bound, a.rounding_bound);
  return a;
}

}  // namespace attn

namespace attn {

std::string describe(const acceptance& a) {
  const std::string naive = fmt::format("2 x naive error {:.3e} + {:.0e} = {:.3e}", a.naive_error, a.floor,
                                        a.naive_bound);
  const std::string rounding = fmt::format("{:g} x rounding error {:.3e} + {:.0e} = {:.3e}", rounding_multiple,
                                           a.rounding_error, a.floor, a.rounding_bound);
  return a.decided_by == error_bound::rounding
             ? fmt::format("the rounding bound decides: {} (the naive bound: {})", rounding, naive)
             : fmt::format("the naive bound decides: {} (the rounding bound: {})", naive, rounding);
}

}  // namespace attn
