// NVML: absent (no driver, as on a CI machine) it says so and nothing stops; the warnings about
// clocks and throttling are pure functions of the records.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/command_support.hpp"
#include "parsed_options.hpp"
#include "run/nvml.hpp"

namespace attn {
namespace {

TEST(nvml, an_absent_library_gives_a_clear_note_and_no_readings) {
  const nvml_monitor m = nvml_monitor::open("", 0, "libnvidia-ml-that-does-not-exist.so.1");
  EXPECT_FALSE(m.available());
  EXPECT_NE(m.note().find("NVML absent"), std::string::npos) << m.note();
  EXPECT_NE(m.note().find("libnvidia-ml-that-does-not-exist.so.1"), std::string::npos) << m.note();
  EXPECT_NE(m.note().find("measurement goes on"), std::string::npos) << m.note();
  EXPECT_FALSE(m.read().has_value());
  EXPECT_TRUE(m.driver_version().empty());
  // Nor energy: the one note says so, and no reading is made up.
  EXPECT_NE(m.note().find("energy"), std::string::npos) << m.note();
  EXPECT_FALSE(m.has_energy());
  EXPECT_FALSE(m.energy_mj().has_value());
  EXPECT_TRUE(m.energy_note().empty());
  gpu_info gpu;
  EXPECT_EQ(energy_note_of(gpu, m), m.note());
}

// The energy counter through a stand-in NVML (tests/fake_nvml): read when the GPU has it, and when
// it answers NVML_ERROR_NOT_SUPPORTED a note says the energy columns stay empty.
TEST(nvml, the_energy_counter_is_read_when_the_gpu_has_one) {
  ::unsetenv("FAKE_NVML_ENERGY");
  const nvml_monitor m = nvml_monitor::open("", 0, ATTN_FAKE_NVML);
  ASSERT_TRUE(m.available()) << m.note();
  EXPECT_EQ(m.driver_version(), "999.1");
  EXPECT_TRUE(m.has_energy()) << m.energy_note();
  const auto a = m.energy_mj(), b = m.energy_mj();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b - *a, 250u);
  gpu_info gpu;
  EXPECT_EQ(energy_note_of(gpu, m), "");
  EXPECT_NO_THROW(require_energy(testing::parsed({"--objective", "energy"}), energy_note_of(gpu, m)));
}

TEST(nvml, a_gpu_without_the_energy_counter_gives_a_note_and_no_energy) {
  ::setenv("FAKE_NVML_ENERGY", "unsupported", 1);
  const nvml_monitor m = nvml_monitor::open("", 0, ATTN_FAKE_NVML);
  ::unsetenv("FAKE_NVML_ENERGY");
  ASSERT_TRUE(m.available()) << m.note();
  EXPECT_TRUE(m.read().has_value());  // the clocks are still read
  EXPECT_FALSE(m.has_energy());
  EXPECT_FALSE(m.energy_mj().has_value());
  EXPECT_NE(m.energy_note().find("nvmlDeviceGetTotalEnergyConsumption returned 3"), std::string::npos)
      << m.energy_note();
  EXPECT_NE(m.energy_note().find("joules per call and TFLOPS per watt are not recorded"), std::string::npos)
      << m.energy_note();
  gpu_info gpu;
  EXPECT_EQ(energy_note_of(gpu, m), m.energy_note());
  // --objective energy cannot rank by it: refused before anything is measured, saying why.
  try {
    require_energy(testing::parsed({"--objective", "energy"}), energy_note_of(gpu, m));
    ADD_FAILURE() << "--objective energy without an energy counter was accepted";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("--objective energy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("returned 3"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(require_energy(testing::parsed({}), energy_note_of(gpu, m)));  // time: fine
}

TEST(nvml, the_real_library_either_reads_or_says_why_not) {
  const nvml_monitor m = nvml_monitor::open("", 0);  // never throws, driver or not
  if (m.available()) {
    EXPECT_TRUE(m.note().empty());
  } else {
    EXPECT_NE(m.note().find("measurement goes on"), std::string::npos) << m.note();
  }
}

TEST(nvml, clocks_of_keeps_both_ends_and_every_reason) {
  const clock_state c = clocks_of({1980, 50, 300, 0x1}, {1755, 63, 650.5, 0x4});
  EXPECT_EQ(c.sm_clock_before_mhz, 1980);
  EXPECT_EQ(c.sm_clock_after_mhz, 1755);
  EXPECT_EQ(c.temperature_c, 63);
  EXPECT_EQ(c.power_w, 650.5);
  EXPECT_EQ(c.throttle, 0x5u);
}

TEST(nvml, throttle_reasons_are_named) {
  EXPECT_EQ(throttle_reasons(0), "");
  EXPECT_EQ(throttle_reasons(0x1), "idle");
  EXPECT_EQ(throttle_reasons(0x4 | 0x40), "sw power cap, hw thermal slowdown");
  EXPECT_EQ(throttle_reasons(0x1000), "0x1000");
}

TEST(nvml, throttling_is_a_clock_move_over_five_percent_or_a_reason_but_idle) {
  EXPECT_FALSE(measured_under_throttling({1980, 1980, 60, 400, 0}));
  EXPECT_FALSE(measured_under_throttling({1980, 1980, 60, 400, throttle_idle}));
  EXPECT_FALSE(measured_under_throttling({1980, 1890, 60, 400, 0}));  // 4.5%
  EXPECT_TRUE(measured_under_throttling({1980, 1870, 60, 400, 0}));   // 5.6%
  EXPECT_TRUE(measured_under_throttling({1980, 1980, 60, 400, 0x8}));
  EXPECT_FALSE(measured_under_throttling({}));  // NVML absent: nothing to say
}

TEST(nvml, the_warning_names_the_variants_measured_under_it) {
  std::vector<record> rows(3);
  for (auto& r : rows) r.status = status::ok;
  rows[0].config = parse_config_name("m128_n64_w4_s2");
  rows[0].clocks = {1980, 1980, 60, 400, 0};
  rows[1].config = parse_config_name("m64_n64_w4_s3");
  rows[1].clocks = {1980, 1500, 80, 700, 0x20};
  rows[2].status = status::wrong;  // never timed: not named
  rows[2].clocks = {1980, 1000, 80, 700, 0x20};
  const std::string w = throttle_warning(rows);
  EXPECT_NE(w.find("1 variant(s)"), std::string::npos) << w;
  EXPECT_NE(w.find("fa2 m64_n64_w4_s3 (1980->1500 MHz, sw thermal slowdown)"), std::string::npos) << w;
  EXPECT_EQ(w.find("m128_n64_w4_s2"), std::string::npos) << w;
  rows[1].clocks = {};
  EXPECT_EQ(throttle_warning(rows), "");
}

}  // namespace
}  // namespace attn
