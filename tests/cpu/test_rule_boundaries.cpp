// Issue 20, item 2: every rule with a boundary or a tie, at the boundary and one past it. The
// export's and the library's bucket (seq_min, seq_max] at N equal to each bound and one past it;
// the export's majority vote with a tie; the tie rule with three configs in its window; the
// stopping rule (never before min_reps even at the time cap, never past max_reps, in the rule and
// in time_kernel's batches); successive halving with odd counts; the screening's reach with the
// best's noise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <vector>

#include "check/verdict.hpp"
#include "library/tuned_table.hpp"
#include "report/best_table.hpp"
#include "report/export.hpp"
#include "run/noise.hpp"
#include "run/search.hpp"
#include "run/timer.hpp"
#include "run/tuner.hpp"
#include "timing_runtime.hpp"

namespace attn {
namespace {

// ---- the bucket rule -------------------------------------------------------------------------

TEST(bucket_rule, seq_bucket_at_each_power_of_two_and_one_past_it) {
  EXPECT_EQ(seq_bucket(1), 1);
  EXPECT_EQ(seq_bucket(2), 2);
  EXPECT_EQ(seq_bucket(3), 4);
  for (int64_t b = 4; b <= (int64_t{1} << 40); b *= 2) {
    EXPECT_EQ(seq_bucket(b), b) << b;          // the upper bound is in its bucket
    EXPECT_EQ(seq_bucket(b + 1), 2 * b) << b;  // one past it is in the next
    EXPECT_EQ(seq_bucket(b / 2 + 1), b) << b;  // one past the lower bound is in it
  }
}

device_desc h200() {
  device_desc d;
  d.name = "NVIDIA H200";
  d.arch = "sm_90a";
  d.cc_major = 9;
  d.sm_count = 132;
  return d;
}

record best_of(int64_t q_len, const std::string& config, double tflops, const std::string& family = "fa2",
               int64_t batch = 1) {
  record r;
  r.device = h200();
  r.family = family;
  r.shape.batch = batch;
  r.shape.heads = r.shape.kv_heads = 8;
  r.shape.q_len = r.shape.kv_len = q_len;
  r.shape.head_dim = 128;
  r.config = parse_config_name(config);
  r.status = status::ok;
  r.median_ms = 1;
  r.tflops = tflops;
  r.rank = 1;
  return r;
}

std::vector<best_row> rows_of(const std::vector<record>& records) {
  std::vector<best_row> out;
  for (const record& r : records) out.push_back({r, std::nullopt, 0});
  return out;
}

TEST(bucket_rule, the_export_puts_a_length_at_a_bound_in_the_bucket_it_closes) {
  // 1024 closes (512, 1024]; 1025 opens (1024, 2048]; 513 opens (512, 1024] too.
  const auto entries = export_entries(rows_of({best_of(1024, "m64_n64_w4_s2", 100), best_of(1025, "m128_n64_w4_s2", 200),
                                               best_of(512, "m64_n32_w4_s1", 50)}));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].seq_min, 512);
  EXPECT_EQ(entries[0].seq_max, 1024);
  EXPECT_EQ(name(entries[0].config), "m64_n64_w4_s2");
  EXPECT_EQ(entries[1].seq_min, 1024);
  EXPECT_EQ(entries[1].seq_max, 2048);
  EXPECT_EQ(entries[2].seq_min, 256);
  EXPECT_EQ(entries[2].seq_max, 512);
  // 513 and 1024 share a bucket: one entry of two shapes.
  const auto shared = export_entries(rows_of({best_of(513, "m64_n64_w4_s2", 100), best_of(1024, "m64_n64_w4_s2", 90)}));
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].shapes, 2);
}

TEST(bucket_rule, the_library_answers_from_a_bucket_at_its_upper_bound_and_not_at_its_lower) {
  export_entry e;
  e.device = "NVIDIA H200";
  e.cc_major = 9;
  e.sm_count = 132;
  e.key.head_dim = 128;
  e.seq_min = 512;
  e.seq_max = 1024;
  e.family = "fa2";
  e.config = parse_config_name("m64_n32_w4_s1");  // not the fallback, so the source shows
  const tuned_table t = tuned_table::from_parts("test", {}, {e});
  auto source_at = [&](int64_t n) {
    problem s;
    s.heads = s.kv_heads = 8;
    s.q_len = s.kv_len = n;
    s.head_dim = 128;
    return t.candidates(h200(), s).front().source;
  };
  EXPECT_EQ(source_at(1024), choice_source::bucket);
  EXPECT_EQ(source_at(1025), choice_source::fallback);
  EXPECT_EQ(source_at(513), choice_source::bucket);
  EXPECT_EQ(source_at(512), choice_source::fallback);
  // Through a CSV export read back, the same bounds.
  const tuned_table csv = tuned_table::parse(export_csv({e}), "export.csv");
  problem s;
  s.heads = s.kv_heads = 8;
  s.head_dim = 128;
  for (const auto& [n, expected] : std::vector<std::pair<int64_t, choice_source>>{
           {512, choice_source::fallback}, {513, choice_source::bucket}, {1024, choice_source::bucket},
           {1025, choice_source::fallback}}) {
    s.q_len = s.kv_len = n;
    EXPECT_EQ(csv.candidates(h200(), s).front().source, expected) << n;
  }
}

// The library's exact tuned shape: every field of the problem must match, or the bucket answers.
TEST(bucket_rule, an_exact_tuned_shape_answers_only_its_own_problem) {
  tuned_shape t;
  t.device = h200();
  t.shape.batch = 2;
  t.shape.heads = 8;
  t.shape.kv_heads = 4;
  t.shape.q_len = 1000;
  t.shape.kv_len = 1500;
  t.shape.head_dim = 128;
  t.family = "fa2";
  t.config = parse_config_name("m64_n32_w4_s1");
  const tuned_table table = tuned_table::from_parts("test", {t}, {});
  EXPECT_EQ(table.candidates(h200(), t.shape).front().source, choice_source::tuned);
  const std::vector<std::pair<std::string, std::function<void(problem&)>>> changes = {
      {"batch", [](problem& s) { s.batch = 3; }},       {"heads", [](problem& s) { s.heads = 16; }},
      {"kv_heads", [](problem& s) { s.kv_heads = 2; }}, {"q_len", [](problem& s) { s.q_len = 999; }},
      {"kv_len", [](problem& s) { s.kv_len = 1501; }},  {"head_dim", [](problem& s) { s.head_dim = 64; }},
      {"causal", [](problem& s) { s.causal = true; }},  {"dtype", [](problem& s) { s.dtype = dtype::fp16; }},
      {"layout", [](problem& s) { s.layout = layout::bshd; }},
  };
  for (const auto& [what, change] : changes) {
    problem s = t.shape;
    change(s);
    EXPECT_EQ(table.candidates(h200(), s).front().source, choice_source::fallback) << what;
  }
  device_desc other = h200();
  other.sm_count = 114;
  EXPECT_EQ(table.candidates(other, t.shape).front().source, choice_source::fallback);
}

// ---- the export's majority vote ----------------------------------------------------------------

TEST(majority_vote, most_wins_beats_higher_tflops) {
  // A wins two shapes of the key, B one with far more TFLOPS: A.
  const auto e = export_entries(rows_of({best_of(4096, "m64_n64_w4_s2", 100, "fa2", 1),
                                         best_of(4096, "m128_n64_w8_s2", 900, "fa2", 2),
                                         best_of(4096, "m64_n64_w4_s2", 110, "fa2", 4)}));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(name(e[0].config), "m64_n64_w4_s2");
  EXPECT_DOUBLE_EQ(e[0].tflops, 110);  // the best TFLOPS of the winner
  EXPECT_EQ(e[0].shapes, 3);
}

TEST(majority_vote, a_tie_in_wins_goes_to_the_higher_tflops_wherever_it_comes) {
  for (bool faster_first : {true, false}) {
    std::vector<record> r = {best_of(4096, "m64_n64_w4_s2", 100, "fa2", 1), best_of(4096, "m64_n64_w4_s2", 105, "fa2", 2),
                             best_of(4096, "m128_n64_w8_s2", 200, "fa2", 3), best_of(4096, "m128_n64_w8_s2", 120, "fa2", 4)};
    if (!faster_first) std::swap(r[0], r[2]), std::swap(r[1], r[3]);
    const auto e = export_entries(rows_of(r));
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(name(e[0].config), "m128_n64_w8_s2") << faster_first;
    EXPECT_DOUBLE_EQ(e[0].tflops, 200);
  }
  // The same config of two families is two candidates.
  const auto f = export_entries(rows_of({best_of(4096, "m64_n64_w4_s2", 100, "fa2", 1),
                                         best_of(4096, "m64_n64_w4_s2", 300, "wgmma", 2)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].family, "wgmma");
}

TEST(majority_vote, a_full_tie_goes_to_the_first_shape_of_the_key) {
  const auto e = export_entries(rows_of({best_of(4096, "m64_n64_w4_s2", 100, "fa2", 1),
                                         best_of(4096, "m128_n64_w8_s2", 100, "fa2", 2)}));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(name(e[0].config), "m64_n64_w4_s2");
}

// ---- the tie rule (choose_best) --------------------------------------------------------------

// An ok record whose median is known to +-0.5% (its 95% confidence half-width, record::noise),
// unless `noise` says otherwise. Two such medians' intervals overlap up to 1.005 / 0.995 - 1 =
// 1.005% apart.
record ok(const std::string& config, double median, double iqr, measurement m = measurement::full,
          double noise = 0.005) {
  record r;
  r.config = parse_config_name(config);
  r.status = status::ok;
  r.median_ms = median;
  r.iqr_ms = iqr;
  r.measured = m;
  r.noise = noise;
  return r;
}

TEST(tie_rule, with_three_configs_in_the_window_the_simplest_of_all_wins) {
  // All within the noise of the fastest (a 3-stage config); the 1-stage one is simplest, whatever order.
  std::vector<record> rows = {ok("m128_n64_w4_s3", 1.000, 0.0001), ok("m128_n64_w4_s1", 1.006, 0.0001),
                              ok("m128_n64_w4_s2", 1.004, 0.0001)};
  EXPECT_EQ(choose_best(rows), 1u);
  std::swap(rows[1], rows[2]);
  EXPECT_EQ(choose_best(rows), 2u);
  // Four in the window, the simplest last.
  rows.push_back(ok("m64_n64_w4_s1", 1.009, 0.0001));
  EXPECT_EQ(choose_best(rows), 3u);
  // Just outside (its interval starts at 1.0101 * 0.995 = 1.00505, past the fastest's 1.005): the
  // simplest is out, the next simplest wins.
  rows[3].median_ms = 1.0101;
  EXPECT_EQ(choose_best(rows), 2u);
}

TEST(tie_rule, the_window_is_measured_from_the_fastest_not_from_the_running_winner) {
  // B is within the noise of the fastest A and simpler; C is within B's but not A's: B wins.
  std::vector<record> rows = {ok("m128_n64_w4_s3", 1.000, 0.0001), ok("m128_n64_w4_s2", 1.008, 0.0001),
                              ok("m128_n64_w4_s1", 1.015, 0.0001)};
  EXPECT_EQ(choose_best(rows), 1u);
}

// Issue 19 item 6: the window comes from the medians' confidence intervals, so a "tied" winner is
// never measurably slower than the fastest.
TEST(tie_rule, a_simpler_config_wins_only_when_its_interval_overlaps_the_fastests) {
  // 0.8% slower, both medians known to +-0.2%: measurably slower (1.008 * 0.998 = 1.00598 > 1.002),
  // so no tie, although it is within the 1% the rule before this one always granted.
  std::vector<record> rows = {ok("m128_n64_w4_s3", 1.000, 0.05, measurement::full, 0.002),
                              ok("m128_n64_w4_s1", 1.008, 0.05, measurement::full, 0.002)};
  EXPECT_EQ(choose_best(rows), 0u);
  EXPECT_FALSE(within_noise_of(rows[1], rows[0]));
  // The same gap with +-0.5% on each: the intervals overlap (1.00296 <= 1.005), a tie, the simpler wins.
  rows[0].noise = rows[1].noise = 0.005;
  EXPECT_TRUE(within_noise_of(rows[1], rows[0]));
  EXPECT_EQ(choose_best(rows), 1u);
  // A noisy fastest (+-1.5%) widens the window, up to the 2% cap: 1.018 ties, 1.021 does not.
  rows[0].noise = 0.015;
  rows[1].median_ms = 1.018;
  EXPECT_EQ(choose_best(rows), 1u);
  rows[1].median_ms = 1.021;
  rows[1].noise = 0.01;  // its interval (from 1.0108) still overlaps the fastest's (to 1.015)
  EXPECT_EQ(choose_best(rows), 0u);
  // Without a noise figure (0: files from before it) only equal medians tie.
  rows[0].noise = rows[1].noise = 0;
  rows[1].median_ms = 1.0001;
  EXPECT_EQ(choose_best(rows), 0u);
  rows[1].median_ms = 1.000;
  EXPECT_EQ(choose_best(rows), 1u);
}

TEST(tie_rule, a_screened_only_record_never_wins_the_tie_against_full_ones) {
  std::vector<record> rows = {ok("m128_n64_w4_s3", 1.000, 0.0001), ok("m64_n64_w4_s1", 1.001, 0.0001, measurement::screened),
                              ok("m128_n64_w4_s2", 1.005, 0.0001)};
  EXPECT_EQ(choose_best(rows), 2u);
  // Faster but only screened: not the fastest either.
  rows[1].median_ms = 0.5;
  EXPECT_EQ(choose_best(rows), 2u);
}

TEST(tie_rule, ranks_put_the_tied_winner_first_and_mark_it) {
  std::vector<record> rows = {ok("m128_n64_w4_s3", 1.000, 0.0001), ok("m128_n64_w4_s1", 1.006, 0.0001),
                              ok("m128_n64_w4_s2", 1.004, 0.0001)};
  const auto best = choose_best(rows);
  assign_ranks(rows, best);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_TRUE(rows[1].tied);
  EXPECT_EQ(rows[0].rank, 2);
  EXPECT_EQ(rows[2].rank, 3);
  EXPECT_FALSE(rows[0].tied);
}

// ---- the stopping rule -----------------------------------------------------------------------

TEST(stopping_rule, never_before_min_reps_even_when_the_time_cap_is_reached) {
  stopping_rule rule;
  rule.min_reps = 20;
  rule.max_reps = 300;
  rule.max_total_ms = 250;
  rule.max_noise = 0.01;
  const std::vector<double> slow(5, 100.0);  // 500 ms in five: twice the cap
  EXPECT_FALSE(enough_samples(slow, 500, rule));
  EXPECT_FALSE(enough_samples(std::vector<double>(19, 100.0), 1900, rule));
  EXPECT_TRUE(enough_samples(std::vector<double>(20, 100.0), 2000, rule));
  // Nor before min_total_ms, however steady.
  rule.min_total_ms = 30;
  EXPECT_FALSE(enough_samples(std::vector<double>(20, 1.0), 20, rule));
  EXPECT_TRUE(enough_samples(std::vector<double>(30, 1.0), 30, rule));
}

TEST(stopping_rule, never_past_max_reps_even_when_noisy_and_below_every_floor) {
  stopping_rule rule;
  rule.min_reps = 20;
  rule.max_reps = 40;
  rule.min_total_ms = 1e9;  // never reached
  rule.max_noise = 0.0001;
  std::vector<double> noisy;
  for (int i = 0; i < 39; ++i) noisy.push_back(i % 2 ? 1.0 : 3.0);
  EXPECT_FALSE(enough_samples(noisy, 78, rule));
  noisy.push_back(1.0);
  EXPECT_TRUE(enough_samples(noisy, 80, rule));
  // max_reps below min_reps: max_reps wins.
  rule.min_reps = 50;
  EXPECT_TRUE(enough_samples(noisy, 80, rule));
}

summary timed_with(timing_runtime& rt, const timing_options& o) {
  l2_flusher flusher(rt, 1024);
  return time_kernel(rt, [&](stream_t) { ++rt.launches; }, flusher, o, nullptr);
}

TEST(stopping_rule, time_kernel_takes_min_reps_even_past_the_time_cap) {
  timing_runtime rt;
  rt.kernel_ms = 100;  // one kernel is over half the cap
  timing_options o;
  o.warmup = 2;
  o.min_reps = 7;
  o.max_reps = 300;
  o.max_total_ms = 150;
  const summary s = timed_with(rt, o);
  EXPECT_EQ(s.count, 7);
  EXPECT_EQ(rt.timed, 7);
  EXPECT_EQ(rt.launches, 7 + 2);  // and the warm-up
}

TEST(stopping_rule, time_kernel_never_takes_more_than_max_reps) {
  for (int max_reps : {1, 7, 23, 40}) {
    timing_runtime rt;
    rt.kernel_ms = 0.001;
    rt.spread = 3;  // the noise stays far above the target
    timing_options o;
    o.warmup = 0;
    o.min_reps = std::min(20, max_reps);
    o.max_reps = max_reps;
    o.max_total_ms = 1e9;
    o.max_noise = 0.0001;
    const summary s = timed_with(rt, o);
    EXPECT_EQ(s.count, max_reps);
    EXPECT_EQ(rt.timed, max_reps);
  }
}

TEST(stopping_rule, time_kernel_stops_at_min_reps_when_steady) {
  timing_runtime rt;
  timing_options o;
  o.warmup = 0;
  o.min_reps = 13;
  o.max_reps = 300;
  const summary s = timed_with(rt, o);
  EXPECT_EQ(s.count, 13);
  EXPECT_DOUBLE_EQ(s.median, 1.0);
  EXPECT_DOUBLE_EQ(s.noise, 0.0);
}

// ---- successive halving with odd counts; the screening's reach ---------------------------------

struct counting_device {
  std::vector<double> medians;
  std::map<size_t, int> screens, fulls;
  measure_fn measure() {
    return [this](size_t i, const timing_options& t) -> std::optional<summary> {
      const bool full = t.max_total_ms >= 250;
      (full ? fulls : screens)[i]++;
      summary s;
      s.count = 20;
      s.median = medians[i];
      s.noise = 0.001;
      return s;
    };
  }
  search_outcome run(search_kind kind) {
    search_settings s;
    s.kind = kind;
    s.full.max_total_ms = 250;
    return run_search(medians.size(), s, measure(), [] { return false; }, [] { return false; }, [] { return 0.0; });
  }
};

counting_device spread_of(int n) {
  counting_device d;
  for (int i = 0; i < n; ++i) d.medians.push_back(1.0 + 0.1 * (n - 1 - i));  // the last is fastest
  return d;
}

TEST(successive_halving, odd_counts_keep_the_larger_half) {
  // 7 -> 4 -> 3: the round after the first screens 4 (7 + 1) / 2, not 3.
  counting_device d = spread_of(7);
  auto out = d.run(search_kind::halving);
  EXPECT_EQ(out.refined, 3);
  int second_round = 0;
  for (const auto& [i, n] : d.screens) second_round += n >= 2;
  EXPECT_EQ(second_round, 4);
  for (size_t i : {4u, 5u, 6u}) EXPECT_EQ(d.fulls[i], 1) << i;  // the three fastest
  for (size_t i : {0u, 1u, 2u, 3u}) EXPECT_EQ(d.fulls.count(i), 0u) << i;
  // 9 -> 5 -> 3; 5 -> 3; 3 alone: one round and all three refined.
  d = spread_of(9);
  out = d.run(search_kind::halving);
  second_round = 0;
  for (const auto& [i, n] : d.screens) second_round += n >= 2;
  EXPECT_EQ(second_round, 5);
  EXPECT_EQ(out.refined, 3);
  d = spread_of(5);
  out = d.run(search_kind::halving);
  EXPECT_EQ(out.refined, 3);
  for (const auto& [i, n] : d.screens) EXPECT_EQ(n, 1) << i;  // 5 -> 3 in one round
  d = spread_of(3);
  out = d.run(search_kind::halving);
  EXPECT_EQ(out.refined, 3);
  EXPECT_EQ(out.screened, 3);
}

summary screened(double median, double noise) {
  summary s;
  s.count = 5;
  s.median = median;
  s.noise = noise;
  return s;
}

TEST(screening_reach, grows_with_the_bests_noise) {
  // The best: 1.0 with 5% noise: reach 1.0 * 1.05 * 1.02 = 1.071. 1.06 (noise 0) is in only
  // because of the best's noise; 1.08 is out; 1.10 with 3% noise (1.067) is in by its own.
  const std::vector<std::optional<summary>> s = {screened(1.0, 0.05), screened(1.06, 0.0), screened(1.08, 0.0),
                                                 screened(1.10, 0.03)};
  EXPECT_EQ(refinement_set(s, 1, 0.02), (std::vector<size_t>{0, 1, 3}));
  // A quiet best: 1.0 * 1.0 * 1.02: only itself and 1.10 * 0.9 = 0.99 (noise 10%) are in.
  const std::vector<std::optional<summary>> q = {screened(1.0, 0.0), screened(1.03, 0.0), screened(1.10, 0.1)};
  EXPECT_EQ(refinement_set(q, 1, 0.02), (std::vector<size_t>{0, 2}));
  // The margin is the tie rule's: a wider one reaches further.
  EXPECT_EQ(refinement_set(q, 1, 0.04), (std::vector<size_t>{0, 1, 2}));
  // keep_top counts whatever the reach.
  EXPECT_EQ(refinement_set(q, 2, 0.0), (std::vector<size_t>{0, 1, 2}));
}

TEST(screening_reach, the_search_refines_exactly_the_set) {
  counting_device d;
  d.medians = {1.0, 1.015, 1.5, 1.6, 1.7};  // noise 0.1%: reach 1.0 * 1.001 * 1.02 = 1.021
  search_settings s;
  s.kind = search_kind::screen;
  s.keep_top = 1;
  s.full.max_total_ms = 250;
  const auto out = run_search(5, s, d.measure(), [] { return false; }, [] { return false; }, [] { return 0.0; });
  EXPECT_EQ(out.refined, 2);
  EXPECT_EQ(d.fulls[0], 1);
  EXPECT_EQ(d.fulls[1], 1);
  EXPECT_EQ(d.fulls.count(2), 0u);
}

// ---- the gate's verdicts at the tolerance ------------------------------------------------------

TEST(gate_verdict, exactly_at_the_tolerance_passes_and_just_past_it_does_not) {
  EXPECT_EQ(judge(1.0, status::ok, 1.25, std::nullopt, 0.25).v, verdict::pass);
  EXPECT_EQ(judge(1.0, status::ok, 1.2501, std::nullopt, 0.25).v, verdict::regression);
  EXPECT_EQ(judge(1.0, status::ok, 0.75, std::nullopt, 0.25).v, verdict::pass);
  EXPECT_EQ(judge(1.0, status::ok, 0.7499, std::nullopt, 0.25).v, verdict::improved);
  // The better of two measurements counts: a slow first one confirmed fast passes, and the reverse.
  EXPECT_EQ(judge(1.0, status::ok, 1.5, 1.1, 0.25).v, verdict::pass);
  EXPECT_EQ(judge(1.0, status::ok, 1.5, 1.4, 0.25).v, verdict::regression);
  EXPECT_DOUBLE_EQ(judge(1.0, status::ok, 1.5, 1.4, 0.25).ratio, 1.4);
  // Not ok is wrong, however fast.
  for (status s : {status::wrong, status::launch_error, status::compile_error}) {
    const judgement j = judge(1.0, s, 0.1, std::nullopt, 0.25);
    EXPECT_EQ(j.v, verdict::wrong);
    EXPECT_EQ(j.why, "the variant is " + to_string(s) + " now");
  }
  EXPECT_TRUE(suspect(1.0, 1.2501, 0.25));
  EXPECT_FALSE(suspect(1.0, 1.25, 0.25));
  EXPECT_TRUE(suspect(1.0, std::nan(""), 0.25));  // a NaN time is never within tolerance
}

}  // namespace
}  // namespace attn
