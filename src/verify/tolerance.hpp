#pragma once
// FlashAttention's acceptance rule: a kernel's max error against the high-precision reference
// may be at most twice the error of the same math done naively in the input precision, plus a
// small absolute floor. NaN never passes.
namespace attn {

constexpr double error_floor = 1e-4;
constexpr double lse_tolerance = 1e-3;  // both sides compute the LSE in fp32

double allowed_error(double naive_low_precision_error, double floor = error_floor);
/// False for NaN or infinite errors.
bool within_tolerance(double error, double allowed);

}  // namespace attn
