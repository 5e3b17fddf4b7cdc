// Issue 19 item 2: --regime sustained runs the kernel back to back until the SM clock settles
// (at least 200 ms, at most 2 s) before a full measurement; burst (the default) does not.
#include <gtest/gtest.h>

#include <chrono>

#include "cli/command_support.hpp"
#include "core/record.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "run/phases.hpp"
#include "run/search.hpp"
#include "run/sustain.hpp"
#include "run/tuner.hpp"
#include "timing_runtime.hpp"

namespace attn {
namespace {

TEST(sustain, the_clock_settles_when_its_last_readings_agree_within_the_tolerance) {
  EXPECT_FALSE(clock_settled({}, 4, 0.01));
  EXPECT_FALSE(clock_settled({1980, 1980, 1980}, 4, 0.01));  // too few readings
  EXPECT_TRUE(clock_settled({1980, 1980, 1980, 1980}, 4, 0.01));
  EXPECT_TRUE(clock_settled({1980, 1830, 1815, 1830, 1815}, 4, 0.01));  // 15 MHz of 1830: 0.8%
  EXPECT_FALSE(clock_settled({1830, 1800, 1815, 1830}, 4, 0.01));       // 30 MHz of 1830: 1.6%
  EXPECT_FALSE(clock_settled({0, 0, 0, 0}, 4, 0.01));                   // no reading
}

TEST(sustain, a_steady_clock_ends_the_wait_at_its_minimum) {
  timing_runtime rt;
  int reads = 0;
  const sustain_result r = run_until_settled(
      rt, [&](stream_t) { ++rt.launches; }, nullptr,
      [&]() -> std::optional<int> { return ++reads, 1755; }, {}, 60);
  EXPECT_TRUE(r.settled);
  EXPECT_GE(r.waited_ms, 200);
  EXPECT_LT(r.waited_ms, 1000);
  EXPECT_EQ(r.launches, rt.launches);
  EXPECT_EQ(static_cast<int>(r.readings.size()), reads);
}

TEST(sustain, a_drifting_clock_is_waited_on_until_the_cap_and_said) {
  timing_runtime rt;
  int reads = 0;
  sustain_options o;
  o.max_ms = 300;  // the test's cap; 2 s in the tool
  // A clock that never settles: 1980 and 1900 MHz in turn (4% apart).
  const sustain_result r = run_until_settled(
      rt, [](stream_t) {}, nullptr,
      [&]() -> std::optional<int> { return ++reads % 2 ? 1980 : 1900; }, o, 60);
  EXPECT_FALSE(r.settled);
  EXPECT_GE(r.waited_ms, 300);
  EXPECT_LT(r.waited_ms, 1000);
}

TEST(sustain, without_a_clock_it_runs_the_minimum_and_does_not_claim_it_settled) {
  timing_runtime rt;
  const sustain_result r = run_until_settled(
      rt, [](stream_t) {}, nullptr, nullptr, {}, 60);
  EXPECT_FALSE(r.settled);
  EXPECT_GE(r.waited_ms, 200);
  EXPECT_LT(r.waited_ms, 1000);
  EXPECT_TRUE(r.readings.empty());
}

// --objective energy's power: NVML's counter between two of its steps (it moves in coarse ones).
// A stand-in counter that steps every 40 ms (the energy up to the step), at 1000 W for its first
// 100 ms (the warm-up, which the window must leave out) and 400 W after, read while the fake kernels
// "run": the power between two steps is 400 W within the reads' timing, where the counter's
// difference over a window that does not start and end on steps would be off by up to a step (10%
// of a 400 ms window), and one that took in the warm-up would read more.
TEST(power, the_window_runs_between_two_steps_of_the_counter_after_the_warm_up) {
  timing_runtime rt;
  const auto start = std::chrono::steady_clock::now();
  auto counter = [&]() -> std::optional<uint64_t> {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double t = 40.0 * static_cast<int>(ms / 40.0);  // the last step's time
    const double mj = t <= 100 ? 1000.0 * t : 1000.0 * 100 + 400.0 * (t - 100);  // W x ms
    return uint64_t(1'000'000) + static_cast<uint64_t>(mj);
  };
  power_options o;
  o.warm_ms = 130, o.window_ms = 400;  // the first step after 130 ms is at 160: all at 400 W from there
  const power_reading p = measure_power(rt, [&](stream_t) { ++rt.launches; }, nullptr, counter, o, 60);
  EXPECT_NEAR(p.watts, 400, 400 * 0.05);
  EXPECT_GE(p.window_ms, 400);
  EXPECT_LT(p.window_ms, 480);  // the first step at or after 400 ms: 10 or 11 steps of 40 ms
  EXPECT_EQ(p.launches, rt.launches);
  EXPECT_GT(p.launches, 0);
}

TEST(power, a_counter_that_does_not_step_twice_or_goes_back_is_not_measured) {
  timing_runtime rt;
  power_options o;
  o.warm_ms = 0, o.window_ms = 50, o.max_ms = 150;
  const auto launch = [](stream_t) {};
  EXPECT_EQ(measure_power(rt, launch, nullptr, [] { return std::optional<uint64_t>(5000); }, o, 60).watts, 0);
  uint64_t mj = 9000;  // steps, but down
  EXPECT_EQ(measure_power(rt, launch, nullptr, [&] { return std::optional<uint64_t>(mj -= 10); }, o, 60).watts, 0);
  EXPECT_EQ(measure_power(rt, launch, nullptr, [] { return std::optional<uint64_t>(); }, o, 60).watts, 0);
  // One that steps at every read is measured (1 mJ a read over the window's time: some power).
  uint64_t up = 0;
  EXPECT_GT(measure_power(rt, launch, nullptr, [&] { return std::optional<uint64_t>(++up); }, o, 60).watts, 0);
}

// --objective energy reads the power window after each full measurement only: the screening (and
// every halving round, which starts from it) does not; --objective time reads none.
TEST(power, only_the_full_measurement_of_the_energy_objective_reads_the_counter) {
  progress_line progress;
  const tune_options energy = make_tune_options(testing::parsed({"--objective", "energy"}), progress);
  EXPECT_EQ(energy.timing.energy_window_ms, energy_window_ms);
  EXPECT_EQ(screen_timing(energy.timing).energy_window_ms, 0);
  EXPECT_EQ(make_tune_options(testing::parsed({}), progress).timing.energy_window_ms, 0);
}

TEST(regime, parses_and_names_a_bad_one) {
  EXPECT_EQ(parse_regime("burst"), timing_regime::burst);
  EXPECT_EQ(parse_regime("sustained"), timing_regime::sustained);
  EXPECT_EQ(to_string(timing_regime::sustained), "sustained");
  EXPECT_EQ(testing::invalid_input_message([] { parse_regime("steady"); }),
            "invalid --regime 'steady': expected burst or sustained");
  EXPECT_EQ(testing::parsed({}).regime, "burst");
  EXPECT_EQ(testing::parsed({"--regime", "sustained"}).regime, "sustained");
  EXPECT_THROW(testing::parsed({"--regime", "steady"}), invalid_input);
}

TEST(regime, the_timing_line_says_sustained) {
  timing_options t;
  EXPECT_EQ(timing_summary(t, search_kind::screen).find("sustained"), std::string::npos);
  t.regime = timing_regime::sustained;
  EXPECT_NE(timing_summary(t, search_kind::screen)
                .find("sustained: each full measurement after the kernel ran"),
            std::string::npos);
  EXPECT_EQ(screen_timing(t).regime, timing_regime::burst);  // the screening does not wait
}

}  // namespace
}  // namespace attn
