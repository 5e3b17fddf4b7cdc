// Without --out, a run writes results/<device>-<problem>.csv, or the next free name beside it: a
// second run of the same command neither refuses to start nor writes over the first one's results.
#include <gtest/gtest.h>

#include <sys/stat.h>

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

// Issue 21, item 16: the best table's name comes from the file's name alone, and only for a file.
#include "cli/command_support.hpp"

namespace attn {
namespace {

TEST(best_path, from_the_file_name_only_and_only_for_a_regular_file) {
  EXPECT_EQ(best_path_for("results/h200/x.csv"), "results/h200/x.best.csv");
  EXPECT_EQ(best_path_for("a.csv.d/out"), "a.csv.d/out.best.csv");
  EXPECT_EQ(best_path_for("runs.csv/b.csv"), "runs.csv/b.best.csv");
  EXPECT_EQ(best_path_for("/dev/stdout"), "");
  EXPECT_EQ(best_path_for("/dev/null"), "");
  EXPECT_EQ(best_path_for("-"), "");
  temp_dir d;
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  EXPECT_EQ(best_path_for(d / "pipe"), "");
}

}  // namespace
}  // namespace attn
