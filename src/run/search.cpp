#include "run/search.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "core/problem.hpp"

namespace attn {

namespace {

constexpr enum_table<search_kind, 4> search_names{{
    {search_kind::exhaustive, "exhaustive"},
    {search_kind::screen, "screen"},
    {search_kind::halving, "halving"},
    {search_kind::random, "random"},
}};

// Measures one candidate unless the run must stop; false when it must (nothing was measured).
class measurer {
 public:
  measurer(search_outcome& out, const measure_fn& measure, const std::function<bool()>& budget_spent,
           const std::function<bool()>& stop)
      : m_out(out), m_measure(measure), m_budget_spent(budget_spent), m_stop(stop) {}

  bool take(size_t i, const timing_options& options, measurement kind) {
    if (m_over || m_stop()) return !(m_over = true);
    if (m_budget_spent()) {
      m_out.budget_spent = true;
      return !(m_over = true);
    }
    const std::optional<summary> s = m_measure(i, options);
    if (!s) {
      m_out.failed[i] = true;
      m_out.measured[i] = measurement::none;
      return true;
    }
    m_out.timings[i] = *s;
    m_out.measured[i] = kind;
    return true;
  }
  bool over() const { return m_over; }

 private:
  search_outcome& m_out;
  const measure_fn& m_measure;
  const std::function<bool()>& m_budget_spent;
  const std::function<bool()>& m_stop;
  bool m_over = false;
};

std::vector<std::optional<summary>> results_of(const search_outcome& out, const std::vector<size_t>& among) {
  std::vector<std::optional<summary>> r(out.timings.size());
  for (size_t i : among)
    if (!out.failed[i] && out.measured[i] != measurement::none) r[i] = out.timings[i];
  return r;
}

int count_of(const search_outcome& out, measurement m) {
  return static_cast<int>(std::count(out.measured.begin(), out.measured.end(), m));
}

}  // namespace

std::string to_string(search_kind k) { return name_in(search_names, k, "unknown"); }

search_kind parse_search(const std::string& text) {
  if (const auto k = value_in(search_names, text)) return *k;
  throw invalid_input(fmt::format("invalid --search '{}': expected screen, exhaustive, halving or random", text));
}

namespace {
constexpr enum_table<objective, 2> objective_names{{{objective::time, "time"}, {objective::energy, "energy"}}};
}  // namespace

std::string to_string(objective o) { return name_in(objective_names, o, "unknown"); }

objective parse_objective(const std::string& text) {
  if (const auto o = value_in(objective_names, text)) return *o;
  throw invalid_input(fmt::format("invalid --objective '{}': expected time or energy", text));
}

timing_options screen_timing(const timing_options& full) {
  timing_options t = full;
  t.min_reps = std::min(5, full.max_reps);
  t.max_reps = std::max(t.min_reps, std::min(50, full.max_reps));
  t.min_total_ms = 0;
  t.max_total_ms = std::min(10.0, full.max_total_ms);
  t.max_noise = 0.02;
  t.regime = timing_regime::burst;  // a short triage: only the full measurement waits for the clock
  t.energy_window_ms = 0;           // and only it reads the energy counter's window
  return t;
}

std::vector<size_t> refinement_set(const std::vector<std::optional<summary>>& screened, int keep_top,
                                   double tie_margin) {
  std::vector<size_t> order;
  for (size_t i = 0; i < screened.size(); ++i)
    if (screened[i]) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return screened[a]->median < screened[b]->median; });
  if (order.empty()) return order;
  const summary& best = *screened[order.front()];
  const double reach = best.median * (1 + best.noise) * (1 + tie_margin);
  std::vector<size_t> keep;
  for (size_t k = 0; k < order.size(); ++k) {
    const summary& s = *screened[order[k]];
    if (k < static_cast<size_t>(std::max(keep_top, 1)) || s.median * (1 - s.noise) <= reach)
      keep.push_back(order[k]);
  }
  return keep;
}

search_outcome run_search(size_t candidates, const search_settings& settings, const measure_fn& measure,
                          const std::function<bool()>& budget_spent, const std::function<bool()>& stop,
                          const std::function<double()>& clock_s) {
  search_outcome out;
  out.measured.assign(candidates, measurement::none);
  out.timings.assign(candidates, summary{});
  out.failed.assign(candidates, false);
  measurer m(out, measure, budget_spent, stop);
  std::vector<size_t> alive(candidates);
  std::iota(alive.begin(), alive.end(), size_t{0});

  if (settings.kind != search_kind::exhaustive) {
    const double t0 = clock_s();
    timing_options round = screen_timing(settings.full);
    for (;;) {
      for (size_t i : alive)
        if (!m.take(i, round, measurement::screened)) break;
      if (m.over()) break;
      const size_t keep_top = static_cast<size_t>(std::max(settings.keep_top, 1));
      if (settings.kind != search_kind::halving) {
        alive = refinement_set(results_of(out, alive), settings.keep_top, settings.tie_margin);
        break;
      }
      // Successive halving: the faster half goes on at twice the precision, until keep_top are left.
      std::vector<size_t> ranked =
          refinement_set(results_of(out, alive), static_cast<int>(alive.size()), settings.tie_margin);
      if (ranked.size() > keep_top) ranked.resize(std::max(keep_top, (ranked.size() + 1) / 2));
      alive = ranked;
      if (alive.size() <= keep_top) break;
      round.min_reps = std::min(round.min_reps * 2, settings.full.max_reps);
      round.max_reps = std::max(round.min_reps, std::min(round.max_reps * 2, settings.full.max_reps));
      round.max_total_ms = std::min(round.max_total_ms * 2, settings.full.max_total_ms);
    }
    out.screened = static_cast<int>(std::count_if(out.measured.begin(), out.measured.end(),
                                                   [](measurement x) { return x != measurement::none; }));
    out.screen_seconds = clock_s() - t0;
  }
  const double t1 = clock_s();
  for (size_t i : alive)
    if (!m.take(i, settings.full, measurement::full)) break;
  out.refine_seconds = clock_s() - t1;
  out.refined = count_of(out, measurement::full);
  return out;
}

std::vector<tile_config> sample_configs(const std::vector<tile_config>& all, int samples, uint64_t seed) {
  if (samples < 0 || static_cast<size_t>(samples) >= all.size()) return all;
  std::vector<size_t> index(all.size());
  std::iota(index.begin(), index.end(), size_t{0});
  std::mt19937_64 generator(seed);
  // A partial Fisher-Yates shuffle: the first `samples` positions are a uniform draw.
  for (size_t k = 0; k < static_cast<size_t>(samples); ++k) {
    std::uniform_int_distribution<size_t> pick(k, index.size() - 1);
    std::swap(index[k], index[pick(generator)]);
  }
  index.resize(static_cast<size_t>(samples));
  std::sort(index.begin(), index.end());
  std::vector<tile_config> out;
  for (size_t i : index) out.push_back(all[i]);
  return out;
}

}  // namespace attn
