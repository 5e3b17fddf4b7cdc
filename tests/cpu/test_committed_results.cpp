// Every results CSV committed under results/<device>/ reads back with the current reader: the
// schema of the files we ship and the code that reads them cannot drift apart unnoticed. (Files
// directly in results/ are a user's own runs, the default --out location, and are not checked.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "report/csv.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {
namespace {

TEST(committed_results, read_back_and_have_one_best_per_shape) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(ATTN_TUNE_SOURCE_DIR) + "/results")) {
    if (entry.path().extension() != ".csv" ||
        entry.path().parent_path() == std::filesystem::path(ATTN_TUNE_SOURCE_DIR) / "results")
      continue;
    // Best tables, peers.py's and vs_pytorch.py's CSVs sit beside the per-variant results.
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    if (first.rfind("schema_version,", 0) != 0) continue;
    ++files;
    const auto rows = read_csv(entry.path().string());
    ASSERT_FALSE(rows.empty()) << entry.path();
    std::map<std::string, int> best;  // per shape: exactly one rank 1
    for (const auto& r : rows) {
      best[problem_key(r.shape)] += r.rank == 1;
      if (r.status == status::ok) {
        EXPECT_GT(r.tflops, 0) << entry.path();
        // TFLOPS is the FLOP count (4 B H Nq Nkv D, halved when causal; 2.5 times that for pass bwd,
        // 3.5 for fwdbwd) over the median, written out here rather than through attention_flops(),
        // so that the formula itself is checked.
        const double passes = r.shape.pass == attention_pass::bwd ? 2.5 : r.shape.pass == attention_pass::fwdbwd ? 3.5 : 1;
        const double flops = passes * 4.0 * r.shape.batch * r.shape.heads * r.shape.q_len * r.shape.kv_len *
                             r.shape.head_dim / (r.shape.causal ? 2 : 1);
        EXPECT_NEAR(r.tflops, flops / (r.median_ms * 1e9), 1e-6 * r.tflops) << entry.path() << " " << name(r.config);
        EXPECT_LE(r.max_error, r.allowed_error) << entry.path() << " " << name(r.config);
      }
    }
    for (const auto& [key, count] : best) EXPECT_EQ(count, 1) << entry.path() << " " << key;
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace attn
