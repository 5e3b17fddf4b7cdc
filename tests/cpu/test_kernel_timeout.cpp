// --kernel-timeout-s: parsed and checked where it enters, carried into the tuning options and into
// the isolated re-run's command line; and the line attn-tune prints after a variant hung.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "cli/command_support.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"

namespace attn {
namespace {

using testing::parsed;
const std::vector<std::string> base = {"--compile-only", "--shape", "1,2,64,64"};

options with_timeout(const std::string& value) {
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--kernel-timeout-s", value});
  return parsed(args);
}

TEST(kernel_timeout, defaults_to_a_minute_and_reaches_the_tuning_options) {
  EXPECT_EQ(parsed(base).kernel_timeout_s, 60);
  const options o = with_timeout("2.5");
  EXPECT_EQ(o.kernel_timeout_s, 2.5);
  progress_line progress;
  EXPECT_EQ(make_tune_options(o, progress).timing.kernel_timeout_s, 2.5);
  EXPECT_TRUE(std::isinf(with_timeout("inf").kernel_timeout_s));  // never give up
}

TEST(kernel_timeout, zero_negative_and_nan_are_refused_naming_the_value) {
  for (const std::string bad : {"0", "-1", "nan"}) {
    const std::string message = testing::invalid_input_message([&] { with_timeout(bad); });
    EXPECT_NE(message.find("--kernel-timeout-s " + bad), std::string::npos) << message;
  }
}

TEST(kernel_timeout, a_word_is_refused_naming_it) {
  try {
    with_timeout("abc");
    FAIL() << "--kernel-timeout-s abc was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("abc"), std::string::npos) << e.what();
  }
}

TEST(kernel_timeout, the_isolated_rerun_gets_the_same_timeout) {
  const options o = with_timeout("7.25");
  progress_line progress;
  const std::vector<std::string> configs = {"m64_n64_w4_s2", "m128_n64_w4_s1"};
  const options child = parsed(child_arguments(family_run_of(o), make_tune_options(o, progress), "fa2", o.problem, configs, 42, 0, "/tmp/child.csv"));
  EXPECT_EQ(child.kernel_timeout_s, 7.25);
  EXPECT_EQ(child.configs, (std::vector<std::string>{"m64_n64_w4_s2", "m128_n64_w4_s1"}));
  EXPECT_EQ(child.seed, 42u);
}

TEST(kernel_timeout, the_hang_report_names_the_config_and_how_to_leave_it_out) {
  record r;
  r.family = "wgmma";
  r.config = {256, 64, 20, 2};
  r.shape = parse_shape("4,32,4096,128");
  r.status = status::launch_error;
  r.message = "hung: not finished after 60 s (the GPU stays busy until this process exits)";
  const std::string line = hang_report(r, "what it measured is in results/x.csv");
  for (const std::string& part : std::vector<std::string>{"wgmma m256_n64_w20_s2", describe(r.shape), r.message,
                                                         "what it measured is in results/x.csv", "--space",
                                                         "--family wgmma --configs", "--kernel-timeout-s"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
}

}  // namespace
}  // namespace attn
