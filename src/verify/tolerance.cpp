#include "verify/tolerance.hpp"

#include <cmath>

namespace attn {

double allowed_error(double naive_low_precision_error, double floor) {
  return 2 * naive_low_precision_error + floor;
}

bool within_tolerance(double error, double allowed) {
  // Written so that a NaN on either side fails: NaN compares false with everything.
  return std::isfinite(error) && error <= allowed;
}

}  // namespace attn
