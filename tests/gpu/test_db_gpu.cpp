// The tuned-results database on a GPU: a second run answers from it with the config the tuning
// chose, and check measures even with the database at hand.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "gpu_fixture.hpp"
#include "report/csv.hpp"

namespace attn::testing {
namespace {

namespace fs = std::filesystem;

const record& best_of(const std::vector<record>& rows) {
  for (const auto& r : rows)
    if (r.rank == 1) return r;
  throw std::runtime_error("no rank 1");
}

int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST_F(gpu_test, a_database_hit_returns_the_config_the_tuning_chose_and_check_still_measures) {
  if (m_gpu.backend == backend::hip) GTEST_SKIP() << "uses the fa2 family";
  const fs::path dir = fs::temp_directory_path() / ("attn-tune-db-gpu-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "tuned.sqlite").string();
  const std::string base = std::string(ATTN_TUNE_BINARY) +
                           " --shape 1,4,256,64 --family fa2 --space block_m=64,128 block_n=64 warps=4 stages=1,2"
                           " --seed 5 --db " + db;
  ASSERT_EQ(run(base + " --out " + (dir / "first.csv").string() + " > " + (dir / "first.txt").string()), 0);
  EXPECT_EQ(text_of(dir / "first.txt").find("from the database"), std::string::npos);
  ASSERT_EQ(run(base + " --out " + (dir / "second.csv").string() + " > " + (dir / "second.txt").string()), 0);
  const std::string second = text_of(dir / "second.txt");
  EXPECT_NE(second.find("from the database, tuned"), std::string::npos) << second;
  EXPECT_NE(second.find("--retune to measure again"), std::string::npos) << second;
  const std::vector<record> first_rows = read_csv((dir / "first.csv").string());
  const std::vector<record> second_rows = read_csv((dir / "second.csv").string());
  const record& first_best = best_of(first_rows);  // references into the vectors above
  const record& second_best = best_of(second_rows);
  EXPECT_EQ(second_best.config, first_best.config);
  EXPECT_EQ(second_best.median_ms, first_best.median_ms);  // the stored tuning, not a new one
  // --retune measures again (and replaces the entry).
  ASSERT_EQ(run(base + " --retune --out " + (dir / "third.csv").string() + " > " + (dir / "third.txt").string()), 0);
  EXPECT_EQ(text_of(dir / "third.txt").find("from the database"), std::string::npos);

  // check never answers from the database: with the CSV or the database as its baseline it measures.
  for (const std::string& baseline : {(dir / "first.csv").string(), db}) {
    // A tolerance no noise reaches (900%): measured again, the same kernel passes, exit 0.
    const int rc = run(std::string(ATTN_TUNE_BINARY) + " check --baseline " + baseline + " --db " + db +
                       " --min-reps 5 --tolerance 9 > " + (dir / "check.txt").string());
    EXPECT_EQ(rc, 0) << baseline << ": exit " << rc;
    const std::string check = text_of(dir / "check.txt");
    EXPECT_EQ(check.find("from the database"), std::string::npos) << check;
    if (baseline != db) EXPECT_NE(check.find(name(first_best.config)), std::string::npos) << check;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn::testing
