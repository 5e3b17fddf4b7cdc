// Every results CSV committed under results/<device>/ reads back with the current reader: the
// schema of the files we ship and the code that reads them cannot drift apart unnoticed. (Files
// directly in results/ are a user's own runs, the default --out location, and are not checked.)
#include <gtest/gtest.h>

#include <filesystem>

#include "report/csv.hpp"

namespace attn {
namespace {

TEST(committed_results, read_back_and_have_one_best_per_file) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(ATTN_TUNE_SOURCE_DIR) + "/results")) {
    // peers*.csv are peers.py's output (PyTorch/Triton timings), not attn-tune results.
    if (entry.path().extension() != ".csv" || entry.path().filename().string().rfind("peers", 0) == 0 ||
        entry.path().parent_path() == std::filesystem::path(ATTN_TUNE_SOURCE_DIR) / "results")
      continue;
    ++files;
    const auto rows = read_csv(entry.path().string());
    ASSERT_FALSE(rows.empty()) << entry.path();
    int best = 0;
    for (const auto& r : rows) {
      best += r.rank == 1;
      if (r.status == status::ok) {
        EXPECT_GT(r.tflops, 0) << entry.path();
        EXPECT_LE(r.max_error, r.allowed_error) << entry.path() << " " << name(r.config);
      }
    }
    EXPECT_EQ(best, 1) << entry.path();
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace attn
