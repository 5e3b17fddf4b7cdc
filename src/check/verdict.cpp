#include "check/verdict.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "codegen/family.hpp"

namespace attn {

std::string to_string(verdict v) {
  switch (v) {
    case verdict::pass: return "pass";
    case verdict::improved: return "improved";
    case verdict::regression: return "REGRESSION";
    case verdict::wrong: return "WRONG";
    case verdict::not_comparable: return "not comparable";
  }
  return "?";
}

bool suspect(double baseline_ms, double now_ms, double tolerance) {
  return !(now_ms <= baseline_ms * (1 + tolerance));
}

judgement judge(double baseline_ms, status now_status, double now_ms,
                std::optional<double> confirm_ms, double tolerance) {
  judgement j;
  if (now_status != status::ok) {
    j.v = verdict::wrong;
    j.why = fmt::format("the variant is {} now", to_string(now_status));
    return j;
  }
  const double best = confirm_ms ? std::min(now_ms, *confirm_ms) : now_ms;
  j.ratio = best / baseline_ms;
  if (suspect(baseline_ms, best, tolerance)) {
    j.v = verdict::regression;
    j.why = fmt::format("{:.1f}% slower than the baseline (tolerance {:.0f}%){}", (j.ratio - 1) * 100,
                        tolerance * 100, confirm_ms ? ", confirmed by a second measurement" : "");
  } else if (j.ratio < 1 - tolerance) {
    j.v = verdict::improved;
    j.why = fmt::format("{:.1f}% faster: consider updating the baseline", (1 - j.ratio) * 100);
  } else {
    j.v = verdict::pass;
    if (confirm_ms && suspect(baseline_ms, now_ms, tolerance))
      j.why = "first measurement was slow, the second was within tolerance (noise)";
  }
  return j;
}

std::optional<std::string> incomparable(const record& baseline, const device_desc& device) {
  const auto& b = baseline.device;
  if (b.name != device.name || b.cc_major != device.cc_major || b.cc_minor != device.cc_minor ||
      b.sm_count != device.sm_count)
    return fmt::format("baseline measured on {} (sm_{}{}, {} SMs), this is {} (sm_{}{}, {} SMs)", b.name,
                       b.cc_major, b.cc_minor, b.sm_count, device.name, device.cc_major,
                       device.cc_minor, device.sm_count);
  const kernel_family* family = nullptr;
  try {
    family = &find_family(baseline.family);
  } catch (const invalid_input&) {
    return fmt::format("baseline is of kernel family '{}', which this build does not have", baseline.family);
  }
  const bool amd = device.arch.rfind("gfx", 0) == 0;
  if ((family->backend == backend::hip) != amd || !runs_on(*family, device.cc_major, device.cc_minor))
    return fmt::format("baseline is of kernel family '{}', which does not run on {}", baseline.family, device.name);
  return std::nullopt;
}

std::optional<std::string> kernel_change(const record& baseline, const std::string& kernel_hash) {
  if (baseline.kernel_hash == kernel_hash) return std::nullopt;
  return fmt::format("kernel sources changed since the baseline ({} -> {}): this check measures that change",
                     baseline.kernel_hash.empty() ? "unknown" : baseline.kernel_hash, kernel_hash);
}

}  // namespace attn
