#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "invalid_input_message.hpp"

namespace {

using attn::testing::invalid_input_message;

std::string space_error(const std::vector<std::string>& tokens) {
  return invalid_input_message([&] { attn::parse_space(tokens); });
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(ConfigName, Format) {
  EXPECT_EQ(attn::name({128, 64, 4, 2}), "m128_n64_w4_s2");
  EXPECT_EQ(attn::name({64, 32, 8, 1}), "m64_n32_w8_s1");
  EXPECT_EQ(attn::name(attn::tile_config{}), "m64_n64_w4_s2");
}

TEST(ConfigName, Parse) {
  attn::tile_config c = attn::parse_config_name("m128_n64_w4_s2");
  EXPECT_EQ(c.block_m, 128);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.warps, 4);
  EXPECT_EQ(c.stages, 2);
}

TEST(ConfigName, RoundTripsEveryDefaultConfig) {
  for (const attn::tile_config& c : attn::default_space().enumerate()) {
    EXPECT_EQ(attn::parse_config_name(attn::name(c)), c) << attn::name(c);
  }
}

TEST(ConfigName, RejectsBadNamesNamingThem) {
  for (const char* bad : {"", "m128_n64_w4", "m128_n64_w4_s2_x", "n64_m128_w4_s2",
                          "m0_n64_w4_s2", "m-64_n64_w4_s2", "m064_n64_w4_s2", "M128_n64_w4_s2",
                          "m128_n64_w4_s2 ", "m128__n64_w4_s2", "mx_n64_w4_s2", "m128_n64_w4_s",
                          "m128n64w4s2", "m99999999999_n64_w4_s2", "m+128_n64_w4_s2"}) {
    std::string message = invalid_input_message([&] { attn::parse_config_name(bad); });
    EXPECT_TRUE(contains(message, "'" + std::string(bad) + "'")) << bad << ": " << message;
  }
}

TEST(DefaultSpace, Contents) {
  attn::search_space s = attn::default_space();
  EXPECT_EQ(s.block_m, (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(s.block_n, (std::vector<int>{32, 64, 128}));
  EXPECT_EQ(s.warps, (std::vector<int>{4, 8}));
  EXPECT_EQ(s.stages, (std::vector<int>{1, 2, 3, 4}));
}

TEST(DefaultSpace, Enumerates72DistinctConfigsInOrder) {
  std::vector<attn::tile_config> configs = attn::default_space().enumerate();
  ASSERT_EQ(configs.size(), 72u);
  // block_m outermost, stages innermost.
  EXPECT_EQ(configs[0], (attn::tile_config{64, 32, 4, 1}));
  EXPECT_EQ(configs[1], (attn::tile_config{64, 32, 4, 2}));
  EXPECT_EQ(configs[3], (attn::tile_config{64, 32, 4, 4}));
  EXPECT_EQ(configs[4], (attn::tile_config{64, 32, 8, 1}));
  EXPECT_EQ(configs[8], (attn::tile_config{64, 64, 4, 1}));
  EXPECT_EQ(configs[24], (attn::tile_config{128, 32, 4, 1}));
  EXPECT_EQ(configs[47], (attn::tile_config{128, 128, 8, 4}));
  EXPECT_EQ(configs[48], (attn::tile_config{256, 32, 4, 1}));
  EXPECT_EQ(configs[71], (attn::tile_config{256, 128, 8, 4}));
  std::set<std::string> names;
  for (const attn::tile_config& c : configs) names.insert(attn::name(c));
  EXPECT_EQ(names.size(), 72u);
}

TEST(Enumerate, KeepsListedOrderAndHandlesEmptyAxis) {
  attn::search_space s{{128, 64}, {32}, {8}, {3, 1}};
  EXPECT_EQ(s.enumerate(), (std::vector<attn::tile_config>{
                               {128, 32, 8, 3}, {128, 32, 8, 1}, {64, 32, 8, 3}, {64, 32, 8, 1}}));
  s.warps.clear();
  EXPECT_TRUE(s.enumerate().empty());
}

TEST(ParseSpace, NoTokensGivesDefault) {
  attn::search_space s = attn::parse_space({});
  attn::search_space d = attn::default_space();
  EXPECT_EQ(s.block_m, d.block_m);
  EXPECT_EQ(s.block_n, d.block_n);
  EXPECT_EQ(s.warps, d.warps);
  EXPECT_EQ(s.stages, d.stages);
}

TEST(ParseSpace, AllAxes) {
  attn::search_space s =
      attn::parse_space({"block_m=64,128", "block_n=64", "warps=4", "stages=2,3"});
  EXPECT_EQ(s.block_m, (std::vector<int>{64, 128}));
  EXPECT_EQ(s.block_n, (std::vector<int>{64}));
  EXPECT_EQ(s.warps, (std::vector<int>{4}));
  EXPECT_EQ(s.stages, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.enumerate(), (std::vector<attn::tile_config>{
                               {64, 64, 4, 2}, {64, 64, 4, 3}, {128, 64, 4, 2}, {128, 64, 4, 3}}));
}

TEST(ParseSpace, UnnamedAxesKeepDefaultsAndOrderIsKept) {
  attn::search_space s = attn::parse_space({"stages=2", "block_n=128,32"});
  EXPECT_EQ(s.block_m, (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(s.block_n, (std::vector<int>{128, 32}));
  EXPECT_EQ(s.warps, (std::vector<int>{4, 8}));
  EXPECT_EQ(s.stages, (std::vector<int>{2}));
  EXPECT_EQ(s.enumerate().size(), 12u);
}

TEST(ParseSpace, UnknownAxis) {
  std::string message = space_error({"foo=1"});
  EXPECT_TRUE(contains(message, "'foo=1'")) << message;
  EXPECT_TRUE(contains(message, "unknown axis 'foo'")) << message;
  EXPECT_TRUE(contains(space_error({"=64"}), "unknown axis ''"));
  EXPECT_TRUE(contains(space_error({"Block_m=64"}), "'Block_m=64'"));
}

TEST(ParseSpace, MissingEquals) {
  std::string message = space_error({"block_m"});
  EXPECT_TRUE(contains(message, "'block_m'")) << message;
  EXPECT_TRUE(contains(message, "expected <axis>=")) << message;
  EXPECT_TRUE(contains(space_error({""}), "''"));
}

TEST(ParseSpace, EmptyList) {
  std::string message = space_error({"block_m="});
  EXPECT_TRUE(contains(message, "'block_m='")) << message;
  EXPECT_TRUE(contains(message, "no values")) << message;
}

TEST(ParseSpace, BadValues) {
  EXPECT_TRUE(contains(space_error({"block_m=abc"}), "'abc' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"block_m=0"}), "'0' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"block_m=-64"}), "'-64' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"block_m=64x"}), "'64x' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"block_m=64,,128"}), "'' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"block_m=64,"}), "'' is not a positive integer"));
  EXPECT_TRUE(contains(space_error({"warps=99999999999"}), "'99999999999'"));
  std::string message = space_error({"block_n=64", "stages=2,zero"});
  EXPECT_TRUE(contains(message, "'stages=2,zero'")) << message;
  EXPECT_TRUE(contains(message, "'zero'")) << message;
}

TEST(ParseSpace, DuplicateAxis) {
  std::string message = space_error({"warps=4", "stages=1", "warps=8"});
  EXPECT_TRUE(contains(message, "'warps=8'")) << message;
  EXPECT_TRUE(contains(message, "axis 'warps' given twice")) << message;
}

TEST(ParseSpace, DuplicateValue) {
  EXPECT_TRUE(contains(space_error({"block_m=64,64"}), "value 64 listed twice"));
}

TEST(SimplerThan, StagesThenWarpsThenBlockMThenBlockN) {
  // Fewer stages wins even against everything else being larger.
  EXPECT_TRUE(attn::simpler_than({128, 128, 8, 1}, {64, 32, 4, 2}));
  EXPECT_FALSE(attn::simpler_than({64, 32, 4, 2}, {128, 128, 8, 1}));
  // Same stages: fewer warps wins.
  EXPECT_TRUE(attn::simpler_than({128, 128, 4, 2}, {64, 32, 8, 2}));
  EXPECT_FALSE(attn::simpler_than({64, 32, 8, 2}, {128, 128, 4, 2}));
  // Same stages and warps: smaller block_m wins.
  EXPECT_TRUE(attn::simpler_than({64, 128, 4, 2}, {128, 32, 4, 2}));
  EXPECT_FALSE(attn::simpler_than({128, 32, 4, 2}, {64, 128, 4, 2}));
  // Only block_n differs.
  EXPECT_TRUE(attn::simpler_than({64, 32, 4, 2}, {64, 64, 4, 2}));
  EXPECT_FALSE(attn::simpler_than({64, 64, 4, 2}, {64, 32, 4, 2}));
  // Irreflexive.
  EXPECT_FALSE(attn::simpler_than({64, 64, 4, 2}, {64, 64, 4, 2}));
}

TEST(SimplerThan, IsAStrictTotalOrderOnTheDefaultSpace) {
  std::vector<attn::tile_config> configs = attn::default_space().enumerate();
  for (const attn::tile_config& a : configs) {
    for (const attn::tile_config& b : configs) {
      if (a == b) continue;
      EXPECT_NE(attn::simpler_than(a, b), attn::simpler_than(b, a))
          << attn::name(a) << " vs " << attn::name(b);
    }
  }
  std::sort(configs.begin(), configs.end(), attn::simpler_than);
  EXPECT_EQ(configs.front(), (attn::tile_config{64, 32, 4, 1}));
  EXPECT_EQ(configs[1], (attn::tile_config{64, 64, 4, 1}));
  EXPECT_EQ(configs[3], (attn::tile_config{128, 32, 4, 1}));
  EXPECT_EQ(configs[6], (attn::tile_config{256, 32, 4, 1}));
  EXPECT_EQ(configs[9], (attn::tile_config{64, 32, 8, 1}));
  EXPECT_EQ(configs[18], (attn::tile_config{64, 32, 4, 2}));
  EXPECT_EQ(configs.back(), (attn::tile_config{256, 128, 8, 4}));
}
