#pragma once
// The acceptance rule. FlashAttention's: a kernel's max error against the high-precision
// reference may be at most twice the error of the same math done naively in the input precision,
// plus a small absolute floor. With large logits the naive run rounds the scores themselves and
// its error grows far beyond any fused kernel's (60x at inputs scaled by 6), so a second bound
// holds too: a small multiple of the output's own rounding (the error of fp32 scores and softmax
// with only P and O rounded to the input type). The tighter one decides. NaN never passes.
#include <string>

namespace attn {

constexpr double error_floor = 1e-4;
constexpr double lse_tolerance = 1e-3;  // both sides compute the LSE in fp32
/// A fused kernel rounds P before the normalization and O once more; where the reference's
/// rounding lands half an ulp off, the kernel's may land a whole one: twice FlashAttention's 2.
constexpr double rounding_multiple = 4;

double allowed_error(double naive_low_precision_error, double floor = error_floor);
/// False for NaN or infinite errors.
bool within_tolerance(double error, double allowed);

enum class error_bound { naive, rounding };
std::string to_string(error_bound b);  ///< "naive", "rounding"

struct acceptance {
  double naive_error = 0, rounding_error = 0;  ///< the two low-precision runs' errors
  double floor = error_floor;
  double naive_bound = 0;     ///< allowed_error(naive error)
  double rounding_bound = 0;  ///< rounding_multiple * rounding error + floor
  double allowed = 0;         ///< the smaller of the two; NaN when either error is NaN
  error_bound decided_by = error_bound::naive;
};
acceptance acceptance_for(double naive_low_precision_error, double rounding_error, double floor = error_floor);
/// "the rounding bound decides: 4 x rounding error 8.000e-03 + 1e-04 = 3.210e-02 (the naive
/// bound: 2 x naive error 5.250e-01 + 1e-04 = 1.050e+00)", or the same the other way round.
std::string describe(const acceptance& a);

}  // namespace attn
