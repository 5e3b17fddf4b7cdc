#pragma once
// How the verified variants are timed: every one to full precision (exhaustive), or a short
// screening of every one and full precision only for those that can still win (screen), or
// rounds that keep the faster half at twice the precision (halving). Pure: the timing itself is a
// callback, so the logic is tested on synthetic timings without a GPU.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/record.hpp"
#include "run/stats.hpp"
#include "run/timer.hpp"

namespace attn {

enum class search_kind { exhaustive, screen, halving, random };
std::string to_string(search_kind k);  ///< "exhaustive", "screen", "halving", "random"
/// Throws invalid_input naming the text and the choices.
search_kind parse_search(const std::string& text);

/// What the winner is chosen by (--objective): the median time, or the joules per call.
enum class objective { time, energy };
std::string to_string(objective o);  ///< "time", "energy"
/// Throws invalid_input naming the text and the choices.
objective parse_objective(const std::string& text);

/// The tie rule's cap (choose_best): however noisy, a median more than 2% above the fastest's
/// never ties.
constexpr double max_tie_gap = 0.02;

struct search_settings {
  search_kind kind = search_kind::screen;
  timing_options full;  ///< the full-precision measurement
  int keep_top = 3;     ///< refine at least this many (the fastest screened)
  /// A screened variant is refined while its median, less its noise, is within this fraction
  /// above the best's median plus its noise: the tie rule's widest window (choose_best), so every
  /// variant that may win the tie is refined.
  double tie_margin = max_tie_gap;
};

/// The screening measurement: the full one's warm-up and timeout, 5 to 50 repetitions, at most
/// 10 ms (or the full cap when that is smaller), noise target 2%.
timing_options screen_timing(const timing_options& full);

/// One measurement of candidate i with these options: the summary, or nullopt when the variant
/// failed (the caller records why and it is measured no more).
using measure_fn = std::function<std::optional<summary>(size_t candidate, const timing_options& options)>;

struct search_outcome {
  std::vector<measurement> measured;  ///< per candidate: none, screened or full
  std::vector<summary> timings;       ///< per candidate: its last (most precise) measurement
  std::vector<bool> failed;           ///< the measure callback returned nullopt
  int screened = 0, refined = 0;      ///< candidates screened, candidates fully measured
  double screen_seconds = 0, refine_seconds = 0;
  bool budget_spent = false;  ///< some candidates were left unmeasured or only screened for it
};

/// The candidates that screening leaves in the race, by screened median: the keep_top fastest,
/// and every one whose median - noise is within (1 + tie_margin) of the best's median + noise.
/// nullopt entries (failed) are never chosen. Indices ascending by median.
std::vector<size_t> refinement_set(const std::vector<std::optional<summary>>& screened, int keep_top,
                                   double tie_margin);

/// Runs the search over `candidates` verified variants. `budget_spent` is asked before every
/// measurement: once true, nothing more is measured (the best so far stands). `stop` (a hang:
/// the device is unusable) ends everything at once. `clock_s` gives seconds, for the phases'
/// durations.
search_outcome run_search(size_t candidates, const search_settings& settings, const measure_fn& measure,
                          const std::function<bool()>& budget_spent, const std::function<bool()>& stop,
                          const std::function<double()>& clock_s);

/// --search random: `samples` configs of `all`, drawn without replacement by a generator seeded
/// with `seed` (the same seed draws the same ones), in their order in `all`; all of them when
/// samples >= all.size().
std::vector<tile_config> sample_configs(const std::vector<tile_config>& all, int samples, uint64_t seed);

}  // namespace attn
