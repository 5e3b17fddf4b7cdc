#include "run/phases.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace attn {

std::string phase_summary(const tune_result& r) {
  const auto failed = std::count_if(r.records.begin(), r.records.end(),
                                    [](const record& x) { return x.status == status::compile_error; });
  std::string out = fmt::format("compiled {} variants ({} from cache{}) in {:.1f} s", r.compiled, r.cached,
                                failed > 0 ? fmt::format("; {} more failed to compile", failed) : "",
                                r.compile_seconds);
  if (r.verified > 0 || r.verify_seconds > 0) {
    if (r.reference_seconds > 0) out += fmt::format("; reference in {:.1f} s (while compiling)", r.reference_seconds);
    out += fmt::format("; verified {} in {:.1f} s; screened {} in {:.1f} s; refined {} in {:.1f} s", r.verified,
                       r.verify_seconds, r.screened, r.screen_seconds, r.refined, r.refine_seconds);
  }
  if (r.rerun > 0)
    out += fmt::format("; re-ran {} in fresh processes in {:.1f} s (a variant lost the device context)", r.rerun,
                       r.rerun_seconds);
  out += fmt::format("; total {:.1f} s", r.total_seconds + r.rerun_seconds);
  if (r.budget_spent)
    out += "\nbudget: --budget-s ran out before every variant was measured; the best found so far stands";
  return out;
}

std::string timing_summary(const timing_options& t, search_kind search) {
  std::string stop = t.max_noise > 0
                         ? fmt::format("until its 95% confidence half-width is within {:.1f}% of it or {:.0f} ms",
                                       100 * t.max_noise, t.max_total_ms)
                         : fmt::format("until {:.0f} ms", t.max_total_ms);
  if (t.min_total_ms > 0) stop += fmt::format(" (and >= {:.0f} ms)", t.min_total_ms);
  const char* regime = t.regime == timing_regime::sustained
                           ? " (sustained: each full measurement after the kernel ran back to back until the SM "
                             "clock settled, 200 ms to 2 s)"
                           : "";
  return fmt::format("timing: median of >= {} reps, {} (at most {} reps), L2 flushed before each{}; search: {}",
                     t.min_reps, stop, t.max_reps, regime, to_string(search));
}

}  // namespace attn
