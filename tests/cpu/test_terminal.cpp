// -q/-v and colour (issue 11, item 9).
#include <gtest/gtest.h>

#include "cli/terminal.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"

namespace attn {
namespace {

TEST(terminal, colour_only_on_a_terminal_without_no_color) {
  EXPECT_TRUE(use_colour(true, nullptr));
  EXPECT_TRUE(use_colour(true, ""));  // NO_COLOR set but empty does not count
  EXPECT_FALSE(use_colour(true, "1"));
  EXPECT_FALSE(use_colour(false, nullptr));
  EXPECT_EQ(styled(false, fmt::emphasis::bold, "best:"), "best:");
  EXPECT_NE(styled(true, fmt::emphasis::bold, "best:"), "best:");
}

TEST(terminal, progress_fits_the_width) {
  EXPECT_EQ(fit_width("compiling 3/72", 80), "compiling 3/72");
  EXPECT_EQ(fit_width("compiling 3/72", 10), "compili...");
  EXPECT_EQ(fit_width("compiling", 0), "compiling");
  EXPECT_EQ(fit_width("compiling", 2), "co");
}

TEST(terminal, quiet_and_verbose) {
  EXPECT_EQ(testing::parsed({"-q"}).verbosity, verbosity::quiet);
  EXPECT_EQ(testing::parsed({"--verbose"}).verbosity, verbosity::verbose);
  EXPECT_EQ(testing::parsed({}).verbosity, verbosity::normal);
  EXPECT_NE(testing::invalid_input_message([] { testing::parsed({"-q", "-v"}); }).find("exclude each other"),
            std::string::npos);
}

}  // namespace
}  // namespace attn
