// The screening search on synthetic timings: who is refined, who wins, and what a budget leaves.
#include <gtest/gtest.h>

#include <map>

#include "run/search.hpp"
#include "run/tuner.hpp"

namespace attn {
namespace {

summary timing(double median, double noise) {
  summary s;
  s.count = 20;
  s.median = median;
  s.noise = noise;
  return s;
}

// A fake device: each candidate's screened and full timing, and a clock that every measurement
// advances (screening 0.01 s, full 0.25 s).
struct fake_device {
  std::vector<summary> screened, full;
  std::map<size_t, int> screens, fulls;
  double now = 0;
  std::vector<size_t> broken;

  measure_fn measure() {
    return [this](size_t i, const timing_options& t) -> std::optional<summary> {
      if (std::find(broken.begin(), broken.end(), i) != broken.end()) return std::nullopt;
      const bool is_full = t.max_total_ms >= 250;
      now += is_full ? 0.25 : 0.01;
      (is_full ? fulls : screens)[i]++;
      return is_full ? full[i] : screened[i];
    };
  }
};

search_outcome run(fake_device& d, search_kind kind, double budget_s = 1e9) {
  search_settings s;
  s.kind = kind;
  s.full.max_total_ms = 250;
  return run_search(
      d.screened.size(), s, d.measure(), [&] { return d.now >= budget_s; }, [] { return false; },
      [&] { return d.now; });
}

// The records the tuner would make of an outcome (configs simplest first by index).
std::vector<record> records_of(const search_outcome& out) {
  std::vector<record> rows(out.measured.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].config = {64, 64, 4, 1 + static_cast<int>(i)};  // a higher index is less simple
    if (out.measured[i] == measurement::none) continue;
    rows[i].status = status::ok;
    rows[i].measured = out.measured[i];
    rows[i].median_ms = out.timings[i].median;
    rows[i].iqr_ms = out.timings[i].median * out.timings[i].noise;
  }
  return rows;
}

fake_device spread(int n, double noise) {
  fake_device d;
  for (int i = 0; i < n; ++i) {
    d.screened.push_back(timing(1.0 + 0.1 * i, noise));
    d.full.push_back(timing(1.0 + 0.1 * i, noise / 4));
  }
  return d;
}

TEST(search, clear_winner_refines_only_the_top_few) {
  fake_device d = spread(20, 0.01);
  const search_outcome out = run(d, search_kind::screen);
  EXPECT_EQ(out.screened, 20);
  EXPECT_EQ(out.refined, 3);  // keep_top; the rest are > 10% slower than the best
  EXPECT_EQ(out.measured[0], measurement::full);
  EXPECT_EQ(out.measured[2], measurement::full);
  EXPECT_EQ(out.measured[3], measurement::screened);
  EXPECT_FALSE(out.budget_spent);
  const auto rows = records_of(out);
  EXPECT_EQ(choose_best(rows), 0u);
  EXPECT_NEAR(d.now, 20 * 0.01 + 3 * 0.25, 1e-9);  // vs 20 * 0.25 exhaustive
}

TEST(search, exhaustive_measures_every_one_in_full) {
  fake_device d = spread(6, 0.01);
  const search_outcome out = run(d, search_kind::exhaustive);
  EXPECT_EQ(out.screened, 0);
  EXPECT_EQ(out.refined, 6);
  EXPECT_TRUE(d.screens.empty());
}

TEST(search, ties_within_the_screening_noise_are_all_refined) {
  fake_device d = spread(10, 0.01);
  for (int i = 0; i < 6; ++i) d.screened[i] = d.full[i] = timing(1.0 + 0.004 * i, 0.01);
  const search_outcome out = run(d, search_kind::screen);
  EXPECT_EQ(out.refined, 6);  // 1.000 .. 1.020: each may be the true best or win the tie
  for (int i = 6; i < 10; ++i) EXPECT_EQ(out.measured[i], measurement::screened) << i;
  // The tie rule among the refined: the simplest within 1% of the fastest.
  EXPECT_EQ(choose_best(records_of(out)), 0u);
}

TEST(search, a_noisy_variant_that_screens_well_and_refines_badly_does_not_win) {
  fake_device d = spread(8, 0.01);
  d.screened[5] = timing(0.90, 0.05);  // looks fastest in the short screening
  d.full[5] = timing(1.30, 0.002);     // but is slower measured properly
  const search_outcome out = run(d, search_kind::screen);
  EXPECT_EQ(out.measured[5], measurement::full);
  EXPECT_EQ(out.measured[0], measurement::full);
  auto rows = records_of(out);
  const auto best = choose_best(rows);
  EXPECT_EQ(best, 0u);
  // A screened-only variant with a faster (coarse) median never beats a fully measured one.
  rows[7].status = status::ok;
  rows[7].measured = measurement::screened;
  rows[7].median_ms = 0.5;
  EXPECT_EQ(choose_best(rows), 0u);
  assign_ranks(rows, choose_best(rows));
  EXPECT_GT(rows[7].rank, rows[5].rank);  // fully measured ones rank first
}

TEST(search, a_budget_that_runs_out_keeps_the_best_so_far) {
  fake_device d = spread(20, 0.01);
  // 20 screenings take 0.2 s; the budget ends during the refinement, after one full measurement.
  const search_outcome out = run(d, search_kind::screen, 0.3);
  EXPECT_TRUE(out.budget_spent);
  EXPECT_EQ(out.screened, 20);
  EXPECT_EQ(out.refined, 1);
  EXPECT_EQ(out.measured[0], measurement::full);
  EXPECT_EQ(out.measured[1], measurement::screened);
  EXPECT_EQ(choose_best(records_of(out)), 0u);
  // A budget spent during the screening: the rest are not measured at all.
  fake_device e = spread(20, 0.01);
  const search_outcome early = run(e, search_kind::screen, 0.045);
  EXPECT_TRUE(early.budget_spent);
  EXPECT_EQ(early.screened, 5);
  EXPECT_EQ(early.refined, 0);
  EXPECT_EQ(early.measured[10], measurement::none);
  EXPECT_EQ(choose_best(records_of(early)), 0u);  // the best screened one
}

TEST(search, a_failed_variant_is_never_refined_and_a_stop_ends_everything) {
  fake_device d = spread(6, 0.01);
  d.broken = {0};
  const search_outcome out = run(d, search_kind::screen);
  EXPECT_TRUE(out.failed[0]);
  EXPECT_EQ(out.measured[0], measurement::none);
  EXPECT_EQ(d.fulls.count(0), 0u);
  EXPECT_EQ(out.refined, 3);
  search_settings s;
  int calls = 0;
  const search_outcome stopped = run_search(
      6, s, [&](size_t, const timing_options&) { ++calls; return std::optional<summary>(timing(1, 0)); },
      [] { return false; }, [&] { return calls >= 2; }, [] { return 0.0; });
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(stopped.budget_spent);
}

TEST(search, successive_halving_keeps_the_faster_half_until_three_are_left) {
  fake_device d = spread(16, 0.01);
  const search_outcome out = run(d, search_kind::halving);
  EXPECT_EQ(out.refined, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.measured[i], measurement::full) << i;
  EXPECT_EQ(d.screens[0], 3);  // rounds of 16, 8, 4
  EXPECT_EQ(d.screens[15], 1);
  EXPECT_EQ(d.screens[7], 2);
}

TEST(refinement_set, keeps_the_top_few_and_the_ones_within_reach) {
  std::vector<std::optional<summary>> s = {timing(1.2, 0.0), timing(1.0, 0.01), std::nullopt,
                                           timing(1.05, 0.03), timing(2.0, 0.01)};
  // Reach: 1.0 * 1.01 * 1.02 = 1.0302; 1.05 * 0.97 = 1.0185 is within it; 1.2 is only by keep_top.
  EXPECT_EQ(refinement_set(s, 1, 0.02), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(refinement_set(s, 3, 0.02), (std::vector<size_t>{1, 3, 0}));
  EXPECT_EQ(refinement_set(s, 9, 0.02), (std::vector<size_t>{1, 3, 0, 4}));  // never the failed one
  EXPECT_TRUE(refinement_set({}, 3, 0.02).empty());
}

TEST(screen_timing, is_short_and_keeps_the_timeout) {
  timing_options full;
  full.kernel_timeout_s = 7;
  const timing_options t = screen_timing(full);
  EXPECT_EQ(t.min_reps, 5);
  EXPECT_LE(t.max_total_ms, 10);
  EXPECT_EQ(t.kernel_timeout_s, 7);
  EXPECT_EQ(t.warmup, full.warmup);
}

TEST(search_kind, names_round_trip) {
  for (auto k : {search_kind::exhaustive, search_kind::screen, search_kind::halving, search_kind::random})
    EXPECT_EQ(parse_search(to_string(k)), k);
  EXPECT_THROW(parse_search("greedy"), invalid_input);
}

TEST(sample_configs, a_seeded_subset_in_space_order) {
  const auto all = default_space().enumerate();
  const auto a = sample_configs(all, 10, 42);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, sample_configs(all, 10, 42));
  EXPECT_NE(a, sample_configs(all, 10, 43));
  size_t at = 0;
  for (const auto& c : a) {  // each one of the space, in its order, none twice
    auto it = std::find(all.begin() + static_cast<long>(at), all.end(), c);
    ASSERT_NE(it, all.end());
    at = static_cast<size_t>(it - all.begin()) + 1;
  }
  EXPECT_EQ(sample_configs(all, 500, 1), all);
}

}  // namespace
}  // namespace attn
