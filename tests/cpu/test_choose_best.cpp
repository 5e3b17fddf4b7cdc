// The winner is chosen deterministically: fastest ok variant, near-ties to the simpler config.
#include <gtest/gtest.h>

#include "invalid_input_message.hpp"
#include "run/tuner.hpp"

namespace attn {
namespace {

// Its median known to +-0.5% (record::noise) unless the test says otherwise.
record ok(tile_config c, double median, double iqr) {
  record r;
  r.config = c;
  r.status = status::ok;
  r.median_ms = median;
  r.iqr_ms = iqr;
  r.noise = 0.005;
  return r;
}

TEST(choose_best, nothing_ok_means_no_winner) {
  std::vector<record> rows(2);
  rows[0].status = status::wrong;
  rows[0].median_ms = 0.1;  // a wrong variant is never best, however fast
  rows[1].status = status::compile_error;
  EXPECT_FALSE(choose_best(rows).has_value());
}

TEST(choose_best, clear_winner) {
  std::vector<record> rows = {ok({128, 64, 8, 4}, 1.00, 0.001), ok({64, 64, 4, 2}, 1.20, 0.001)};
  EXPECT_EQ(choose_best(rows), 0u);
}

TEST(choose_best, wrong_variant_faster_than_all_is_ignored) {
  std::vector<record> rows = {ok({64, 64, 4, 2}, 1.0, 0.001), ok({128, 64, 4, 2}, 1.1, 0.001)};
  rows.push_back(rows[1]);
  rows[2].status = status::wrong;
  rows[2].median_ms = 0.5;
  EXPECT_EQ(choose_best(rows), 0u);
}

TEST(choose_best, near_tie_within_the_noise_goes_to_the_simpler_config) {
  // 0.5% apart, each median known to +-0.5%: their intervals overlap, so fewer stages wins.
  std::vector<record> rows = {ok({128, 64, 4, 3}, 1.000, 0.0001), ok({128, 64, 4, 2}, 1.005, 0.0001)};
  EXPECT_EQ(choose_best(rows), 1u);
}

TEST(choose_best, near_tie_window_grows_with_the_noise_up_to_two_percent) {
  // 1.5% apart and the fastest's median known to +-5% only: a tie.
  std::vector<record> rows = {ok({256, 64, 8, 2}, 1.00, 0.05), ok({128, 64, 4, 2}, 1.015, 0.01)};
  rows[0].noise = 0.05;
  EXPECT_EQ(choose_best(rows), 1u);
  rows[0].noise = 0.001;  // known to +-0.1%: the 1.5% gap is real
  EXPECT_EQ(choose_best(rows), 0u);
  // However noisy the fastest, a config 3% slower never wins.
  rows[0].noise = 0.05;
  rows[1].median_ms = 1.03;
  EXPECT_EQ(choose_best(rows), 0u);
}

TEST(assign_ranks, best_first_then_by_median) {
  std::vector<record> rows = {ok({128, 64, 4, 3}, 1.000, 0.0001), ok({128, 64, 4, 2}, 1.005, 0.0001),
                              ok({64, 32, 4, 1}, 2.0, 0.01)};
  rows.push_back(record{});  // pruned: unranked
  const auto best = choose_best(rows);
  assign_ranks(rows, best);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[0].rank, 2);
  EXPECT_EQ(rows[2].rank, 3);
  EXPECT_EQ(rows[3].rank, 0);
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

TEST(assign_ranks, a_tied_winner_slower_than_rank_two_is_marked) {
  std::vector<record> rows(2);
  for (auto& r : rows) r.status = status::ok, r.measured = measurement::full;
  rows[0].config = {128, 64, 4, 3}, rows[0].median_ms = 1.000, rows[0].noise = 0.005;
  rows[1].config = {128, 64, 4, 2}, rows[1].median_ms = 1.005, rows[1].noise = 0.005;
  const auto best = choose_best(rows);
  ASSERT_EQ(best, 1u);  // the simpler one, within the noise
  assign_ranks(rows, best);
  EXPECT_TRUE(rows[1].tied);
  EXPECT_FALSE(rows[0].tied);
  // A winner that is also the fastest is not tied.
  rows[1].median_ms = 0.99;
  assign_ranks(rows, choose_best(rows));
  EXPECT_FALSE(rows[1].tied);
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// Issue 19 item 3: --objective energy ranks by joules per call.
record with_energy(tile_config c, double median, double joules) {
  record r = ok(c, median, 0.0001);
  r.measured = measurement::full;
  r.joules_per_call = joules;
  return r;
}

TEST(choose_best, objective_energy_takes_the_fewest_joules_per_call) {
  // The fastest draws more power: 1.00 ms at 0.80 J against 1.10 ms at 0.70 J.
  std::vector<record> rows = {with_energy({128, 128, 8, 3}, 1.00, 0.80), with_energy({128, 64, 4, 2}, 1.10, 0.70),
                              with_energy({64, 64, 4, 2}, 1.50, 0.95)};
  EXPECT_EQ(choose_best(rows), 0u);  // by time
  EXPECT_EQ(choose_best(rows, objective::energy), 1u);
  assign_ranks(rows, choose_best(rows, objective::energy), objective::energy);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[0].rank, 2);  // then by joules, not by median
  EXPECT_EQ(rows[2].rank, 3);
  EXPECT_FALSE(rows[1].tied);  // slower than rank 2, but by its objective: no tie to explain
}

TEST(choose_best, objective_energy_ranks_records_without_energy_after_those_with_it) {
  std::vector<record> rows = {with_energy({128, 128, 8, 3}, 1.00, 0), with_energy({128, 64, 4, 2}, 1.10, 0.70),
                              with_energy({64, 64, 4, 2}, 0.90, 0)};
  EXPECT_EQ(choose_best(rows, objective::energy), 1u);  // the only one measured wins
  assign_ranks(rows, 1u, objective::energy);
  EXPECT_EQ(rows[2].rank, 2);  // then by median
  EXPECT_EQ(rows[0].rank, 3);
}

TEST(choose_best, objective_energy_without_any_energy_falls_back_to_time) {
  // No counter moved (or none was read): never a guess, the time rule decides.
  std::vector<record> rows = {with_energy({128, 128, 8, 3}, 1.00, 0), with_energy({128, 64, 4, 2}, 1.20, 0)};
  EXPECT_EQ(choose_best(rows, objective::energy), choose_best(rows));
  // A screened-only record's energy does not beat a fully measured one.
  rows.push_back(with_energy({64, 64, 4, 1}, 0.9, 0.1));
  rows.back().measured = measurement::screened;
  rows[1].joules_per_call = 0.5;
  EXPECT_EQ(choose_best(rows, objective::energy), 1u);
}

TEST(objective, parses_time_and_energy_and_names_a_bad_one) {
  EXPECT_EQ(parse_objective("time"), objective::time);
  EXPECT_EQ(parse_objective("energy"), objective::energy);
  EXPECT_EQ(to_string(objective::energy), "energy");
  EXPECT_EQ(testing::invalid_input_message([] { parse_objective("power"); }),
            "invalid --objective 'power': expected time or energy");
}

}  // namespace
}  // namespace attn
