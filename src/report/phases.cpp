#include "report/phases.hpp"

#include <fmt/format.h>

namespace attn {

std::string phase_summary(const tune_result& r) {
  std::string out = fmt::format("compiled {} variants ({} from cache) in {:.1f} s", r.compiled, r.cached,
                                r.compile_seconds);
  if (r.verified > 0 || r.verify_seconds > 0) {
    out += fmt::format("; verified {} in {:.1f} s", r.verified, r.verify_seconds);
    if (r.screened > 0) out += fmt::format("; screened {} in {:.1f} s", r.screened, r.screen_seconds);
    out += fmt::format("; refined {} in {:.1f} s", r.refined, r.refine_seconds);
  }
  out += fmt::format("; total {:.1f} s", r.total_seconds);
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
  return fmt::format("timing: median of >= {} reps, {} (at most {} reps), L2 flushed before each; search: {}",
                     t.min_reps, stop, t.max_reps, to_string(search));
}

}  // namespace attn
