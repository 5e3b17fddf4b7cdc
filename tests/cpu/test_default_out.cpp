// Without --out, a run writes results/<device>-<problem>.csv, or the next free name beside it: a
// second run of the same command neither refuses to start nor writes over the first one's results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "cli/options.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

TEST(default_out, takes_the_first_free_name) {
  temp_dir d;
  const std::string path = d / "dev-1x2x64x64x64-bf16-bhsd.csv";
  EXPECT_EQ(claimed_file(path).path(), path);
  EXPECT_FALSE(std::filesystem::exists(path));  // dropped while empty: removed again
  std::ofstream(path) << "first run\n";
  EXPECT_EQ(claimed_file(path).path(), d / "dev-1x2x64x64x64-bf16-bhsd-2.csv");
  std::ofstream(d / "dev-1x2x64x64x64-bf16-bhsd-2.csv") << "second run\n";
  EXPECT_EQ(claimed_file(path).path(), d / "dev-1x2x64x64x64-bf16-bhsd-3.csv");
}

// Issue 21, item 3: runs started at once each get a name of their own.
TEST(default_out, runs_at_once_claim_distinct_names) {
  temp_dir d;
  const std::string path = d / "results/dev.csv";
  std::vector<claimed_file> claims(8);
  std::vector<std::thread> threads;
  for (auto& c : claims) threads.emplace_back([&c, &path] { c = claimed_file(path); });
  for (auto& t : threads) t.join();
  std::set<std::string> names;
  for (const auto& c : claims) names.insert(c.path());
  EXPECT_EQ(names.size(), 8u);
  const std::string written = claims[0].path();
  spit(written, "written\n");
  claims.clear();
  EXPECT_TRUE(std::filesystem::exists(written));
  size_t left = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d / "results")) ++left;
  EXPECT_EQ(left, 1u);  // the written one stays, the empty claims are gone
}

}  // namespace
}  // namespace attn
