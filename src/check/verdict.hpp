#pragma once
// The performance gate's judgement of one shape, as a pure function of the numbers.
#include <optional>
#include <string>

#include "core/record.hpp"

namespace attn {

enum class verdict { pass, improved, regression, wrong, not_comparable };
std::string to_string(verdict v);

struct judgement {
  verdict v = verdict::pass;
  double ratio = 0;  ///< now / baseline time (> 1 is slower), from the better of the measurements
  std::string why;
};

/// now_ms: the first measurement; confirm_ms: a second one, taken only when the first looked
/// like a regression (the better of the two counts, so one noisy run does not fail the gate).
/// A run that is not ok is `wrong`, whatever its time.
judgement judge(double baseline_ms, status now_status, double now_ms,
                std::optional<double> confirm_ms, double tolerance);
/// Whether `now` looks slower than the baseline by more than the tolerance (so: measure again).
bool suspect(double baseline_ms, double now_ms, double tolerance);

/// Why a baseline row cannot be compared here (another device, or a kernel family this build
/// does not have); nullopt if it can.
std::optional<std::string> incomparable(const record& baseline, const device_desc& device);
/// A note when the baseline was measured with other kernel sources: then the check measures
/// exactly that change, and says so. nullopt when the sources are the same.
std::optional<std::string> kernel_change(const record& baseline, const std::string& kernel_hash);

}  // namespace attn
