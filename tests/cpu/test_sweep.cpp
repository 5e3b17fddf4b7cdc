// Sweep files, sharding, resume and merge: the workflow's pure pieces.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "sweep/merge.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {
namespace {

const std::string header = "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n";

class sweep_file_test : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(m_path) << text;
    return m_path;
  }
  void TearDown() override { std::filesystem::remove(m_path); }
  // One file per test: ctest runs the tests of this suite as parallel processes.
  std::string m_path = (std::filesystem::temp_directory_path() /
                        (std::string("attn-tune-sweep-test-") +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv"))
                           .string();
};

std::string error_of(const std::string& path) {
  try {
    read_sweep_file(path);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(sweep_file_test, blanks_take_defaults) {
  const auto rows = read_sweep_file(write(header + "# a comment\nx,2,32,8,1024,,128,1,,\n,1,8,,512,2048,64,,fp16,bshd\n"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "x");
  EXPECT_EQ(rows[0].problem.kv_heads, 8);
  EXPECT_EQ(rows[0].problem.kv_len, 1024);  // blank kv_len = N
  EXPECT_TRUE(rows[0].problem.causal);
  EXPECT_EQ(rows[0].problem.dtype, dtype::bf16);
  EXPECT_EQ(rows[1].problem.kv_heads, 8);  // blank kv_heads = H
  EXPECT_EQ(rows[1].problem.kv_len, 2048);
  EXPECT_FALSE(rows[1].problem.causal);
  EXPECT_EQ(rows[1].problem.layout, layout::bshd);
  EXPECT_FALSE(rows[1].name.empty());  // a blank name becomes the shape's description
  EXPECT_EQ(rows[1].line, 4);
}

TEST_F(sweep_file_test, bad_rows_name_file_line_and_column) {
  auto expect = [&](const std::string& body, const std::string& what) {
    const std::string e = error_of(write(header + body));
    EXPECT_NE(e.find(m_path + ":2"), std::string::npos) << e;
    EXPECT_NE(e.find(what), std::string::npos) << e;
  };
  expect("x,2,thirty,8,1024,,128,1,,\n", "column 'H': 'thirty'");
  expect("x,0,32,8,1024,,128,1,,\n", "column 'B': '0'");
  expect("x,2,32,8,1024,,300,1,,\n", "head dim 300");
  expect("x,2,32,5,1024,,128,1,,\n", "kv-heads 5");
  expect("x,2,32,8,1024,,128,maybe,,\n", "column 'causal': 'maybe'");
  expect("x,2,32,8,1024,,128,1,fp8,\n", "fp8");
  expect("x,2,32,8,1024,,128,1,,sbhd\n", "sbhd");
}

TEST_F(sweep_file_test, structural_errors_name_the_file) {
  EXPECT_NE(error_of(write("name,B,H\nx,1,2\n")).find(m_path), std::string::npos);
  EXPECT_NE(error_of(write(header)).find("has no rows"), std::string::npos);
  EXPECT_NE(error_of("/no/such/sweep.csv").find("/no/such/sweep.csv"), std::string::npos);
}

TEST(shipped_sweeps, parse) {
  const std::string dir = std::string(ATTN_TUNE_SOURCE_DIR) + "/sweeps/";
  EXPECT_EQ(read_sweep_file(dir + "llm-prefill.csv").size(), 36u);
  EXPECT_EQ(read_sweep_file(dir + "yardstick.csv").size(), 12u);
  const auto smoke = read_sweep_file(dir + "ci-smoke.csv");
  EXPECT_EQ(smoke.size(), 4u);
  EXPECT_EQ(smoke[3].problem.layout, layout::bshd);
  const auto dims = read_sweep_file(dir + "head-dims.csv");
  ASSERT_EQ(dims.size(), 7u);
  EXPECT_EQ(dims[1].problem.head_dim, 80);
  EXPECT_EQ(dims[5].problem.head_dim, 192);
  EXPECT_TRUE(dims[5].problem.causal);
}

TEST(shard, parse_explicit_and_auto) {
  const std::map<std::string, std::string> none;
  auto env_of = [](const std::map<std::string, std::string>& m) {
    return [&m](const char* n) -> const char* {
      auto it = m.find(n);
      return it == m.end() ? nullptr : it->second.c_str();
    };
  };
  auto s = parse_shard("2/5", env_of(none));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  const std::map<std::string, std::string> slurm = {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  s = parse_shard("auto", env_of(slurm));
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  const std::map<std::string, std::string> slurm1 = {
      {"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}};
  EXPECT_EQ(parse_shard("auto", env_of(slurm1)).index, 3);
  const std::map<std::string, std::string> k8s = {{"JOB_COMPLETION_INDEX", "1"}, {"ATTN_TUNE_SHARDS", "3"}};
  s = parse_shard("auto", env_of(k8s));
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 3);
  for (const char* bad : {"5/5", "x/2", "1-2", "-1/2", "1/0"})
    EXPECT_THROW(parse_shard(bad, env_of(none)), invalid_input) << bad;
  EXPECT_THROW(parse_shard("auto", env_of(none)), invalid_input);
  const std::map<std::string, std::string> k8s_no_count = {{"JOB_COMPLETION_INDEX", "1"}};
  EXPECT_THROW(parse_shard("auto", env_of(k8s_no_count)), invalid_input);
}

std::vector<sweep_row> numbered_rows(int n) {
  std::vector<sweep_row> rows;
  for (int i = 0; i < n; ++i) {
    sweep_row r;
    r.name = std::to_string(i);
    r.problem.q_len = r.problem.kv_len = 128 + i;
    rows.push_back(r);
  }
  return rows;
}

TEST(shard, shards_partition_the_rows) {
  const auto rows = numbered_rows(11);
  std::map<std::string, int> seen;
  for (int k = 0; k < 3; ++k)
    for (const auto& r : take_shard(rows, {k, 3})) ++seen[r.name];
  EXPECT_EQ(seen.size(), 11u);
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
  EXPECT_EQ(take_shard(rows, {1, 3}).front().name, "1");  // deterministic: i % n == k
}

TEST(sweep_file, a_repeated_shape_is_tuned_once) {
  auto rows = numbered_rows(4);
  rows[2].problem = rows[0].problem;  // e.g. Mistral-7B's shapes are Llama-3-8B's
  for (size_t i = 0; i < rows.size(); ++i) rows[i].line = static_cast<int>(i) + 5;
  std::vector<std::string> repeats;
  const auto kept = distinct_shapes(rows, repeats);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].name, "0");
  EXPECT_EQ(kept[1].name, "1");
  EXPECT_EQ(kept[2].name, "3");
  ASSERT_EQ(repeats.size(), 1u);
  EXPECT_EQ(repeats[0], "2 (line 7) is the shape of 0 (line 5)");
}

TEST(sweep_file, the_shipped_llm_prefill_sweep_repeats_only_mistral) {
  std::vector<std::string> repeats;
  const auto kept = distinct_shapes(read_sweep_file(ATTN_TUNE_SOURCE_DIR "/sweeps/llm-prefill.csv"), repeats);
  EXPECT_EQ(kept.size(), 30u);
  ASSERT_EQ(repeats.size(), 6u);
  for (const auto& r : repeats) EXPECT_EQ(r.rfind("mistral-7b-", 0), 0u) << r;
}

record result_for(const problem& s, const std::string& device = "NVIDIA H200", const std::string& hash = "aa") {
  record r;
  r.shape = s;
  r.device.name = device;
  r.device.cc_major = 9;
  r.device.sm_count = 132;
  r.kernel_hash = hash;
  r.status = status::ok;
  return r;
}

TEST(resume, finished_shapes_are_skipped) {
  const auto rows = numbered_rows(4);
  const std::vector<record> results = {result_for(rows[0].problem), result_for(rows[2].problem),
                                       result_for(rows[2].problem)};
  EXPECT_EQ(rows_done(rows, results), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(rows_done(rows, {}), (std::vector<bool>(4, false)));
}

TEST(merge, combines_shards_and_refuses_to_mix) {
  const auto rows = numbered_rows(3);
  const std::vector<record> a = {result_for(rows[0].problem)}, b = {result_for(rows[1].problem)};
  EXPECT_EQ(merge_results({a, b}, {"a.csv", "b.csv"}).size(), 2u);
  const std::vector<record> other_device = {result_for(rows[2].problem, "NVIDIA A100-SXM4-80GB")};
  try {
    merge_results({a, other_device}, {"a.csv", "c.csv"});
    FAIL();
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("c.csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("A100"), std::string::npos) << e.what();
  }
  const std::vector<record> other_kernel = {result_for(rows[2].problem, "NVIDIA H200", "bb")};
  EXPECT_THROW(merge_results({a, other_kernel}, {"a.csv", "d.csv"}), invalid_input);
  EXPECT_THROW(merge_results({a, a}, {"a.csv", "a2.csv"}), invalid_input);  // same problem twice
}

TEST(merge, compares_kernel_sources_within_each_family) {
  // Shards of a two-family run: each file has fa2 rows (hash "aa") and wgmma rows (hash "cc").
  const auto rows = numbered_rows(3);
  auto two_families = [&](const problem& s, const std::string& wgmma_hash) {
    record w = result_for(s, "NVIDIA H200", wgmma_hash);
    w.family = "wgmma";
    return std::vector<record>{result_for(s), w};
  };
  EXPECT_EQ(merge_results({two_families(rows[0].problem, "cc"), two_families(rows[1].problem, "cc")},
                          {"a.csv", "b.csv"})
                .size(),
            4u);
  try {
    merge_results({two_families(rows[0].problem, "cc"), two_families(rows[2].problem, "dd")}, {"a.csv", "e.csv"});
    FAIL();
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("wgmma kernel sources dd"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attn
