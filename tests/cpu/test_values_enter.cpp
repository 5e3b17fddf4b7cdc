// Values that used to be accepted and go wrong later are refused where they enter, naming the
// value (issue 11, items 6, 7, 10, 11).
#include <gtest/gtest.h>

#include "cli/option_checks.hpp"
#include "codegen/compile_pool.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "core/config.hpp"
#include "report/bench_name.hpp"
#include "report/best_table.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

using testing::invalid_input_message;
using testing::parsed;

TEST(values_enter, seed_is_never_wrapped) {
  EXPECT_EQ(parse_seed("0"), 0u);
  EXPECT_EQ(parse_seed("18446744073709551615"), 18446744073709551615ull);
  for (const char* bad : {"-1", "18446744073709551616", "1e3", " 5", "+5", ""})
    EXPECT_NE(invalid_input_message([&] { parse_seed(bad); }).find(std::string("'") + bad + "'"), std::string::npos)
        << bad;
  EXPECT_NE(invalid_input_message([&] { parsed({"--seed", "-1"}); }).find("--seed '-1'"), std::string::npos);
}

TEST(values_enter, huge_counts_are_refused_not_clamped) {
  EXPECT_EQ(parse_positive_count("8192", "--kv-len"), 8192);
  const std::string msg = invalid_input_message([] { parsed({"--kv-len", "99999999999999999999"}); });
  EXPECT_NE(msg.find("--kv-len 99999999999999999999: too large"), std::string::npos) << msg;
  EXPECT_NE(invalid_input_message([] { parsed({"--kv-heads", "0"}); }).find("--kv-heads 0"), std::string::npos);
  EXPECT_NE(invalid_input_message([] { parsed({"--kv-len", "12x"}); }).find("--kv-len 12x"), std::string::npos);
}

TEST(values_enter, empty_arch_duplicate_configs_and_dump_without_a_gpu_run) {
  EXPECT_NE(invalid_input_message([] { parsed({"--compile-only", "--arch", ""}); }).find("--arch ''"),
            std::string::npos);
  const std::string twice = invalid_input_message(
      [] { parsed({"--family", "fa2", "--configs", "m64_n64_w4_s1,m128_n64_w4_s2,m64_n64_w4_s1"}); });
  EXPECT_NE(twice.find("m64_n64_w4_s1 is named twice"), std::string::npos) << twice;
  EXPECT_NE(invalid_input_message([] { parsed({"--compile-only", "--dump", "out"}); }).find("--dump"),
            std::string::npos);
}

TEST(values_enter, shard_auto_below_the_array_minimum) {
  auto env = [](const char* n) -> const char* {
    const std::string name = n;
    if (name == "SLURM_ARRAY_TASK_ID") return "3";
    if (name == "SLURM_ARRAY_TASK_MIN") return "5";
    if (name == "SLURM_ARRAY_TASK_COUNT") return "4";
    return nullptr;
  };
  const std::string msg = invalid_input_message([&] { parse_shard("auto", env); });
  EXPECT_NE(msg.find("SLURM_ARRAY_TASK_ID 3 is below SLURM_ARRAY_TASK_MIN 5"), std::string::npos) << msg;
}

TEST(values_enter, space_values_have_bounds_the_resource_models_can_multiply) {
  const std::string msg = invalid_input_message([] { parse_space({"block_m=2147483647"}); });
  EXPECT_NE(msg.find("block_m 2147483647 is over the largest supported, 1024"), std::string::npos) << msg;
  EXPECT_NE(invalid_input_message([] { parse_space({"warps=33"}); }).find("warps 33"), std::string::npos);
  EXPECT_NE(invalid_input_message([] { parse_space({"stages=1000000"}); }).find("stages 1000000"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { parse_config_name("m64_n99999_w4_s1"); }).find("block_n 99999"),
            std::string::npos);
  EXPECT_EQ(parse_space({"block_m=1024", "warps=32", "stages=16"}).block_m, std::vector<int>{1024});
}

TEST(values_enter, pruning_shows_the_numbers_of_an_example) {
  std::vector<variant> v(2);
  v[0].rec.status = v[1].rec.status = status::pruned;
  v[0].rec.config = {64, 64, 4, 9};
  v[0].rec.message = "stages 9 not in [1, 8]";
  v[1].rec.config = {64, 64, 4, 10};
  v[1].rec.message = "stages 10 not in [1, 8]";
  const std::string text = pruning_summary(v);
  EXPECT_NE(text.find("pruned   2 x stages N not in [N, N]; e.g. m64_n64_w4_s9: stages 9 not in [1, 8]"),
            std::string::npos)
      << text;
}

TEST(values_enter, indented_comments_in_sweep_files) {
  temp_dir d;
  spit(d / "s.csv", "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n  # an indented comment\n"
                    "\t# a tabbed one, with, commas\na,1,8,,512,,64,0,,\nb,x,8,,512,,64,0,,\n");
  const std::string msg = invalid_input_message([&] { read_sweep_file(d / "s.csv"); });
  EXPECT_NE(msg.find("s.csv:5"), std::string::npos) << msg;  // line numbers are the file's
  spit(d / "s.csv", "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n  # comment\na,1,8,,512,,64,0,,\n");
  const auto rows = read_sweep_file(d / "s.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].line, 3);
}

TEST(values_enter, a_best_table_is_named_as_one) {
  temp_dir d;
  write_best_csv(d / "x.best.csv", {});
  const std::string msg = invalid_input_message([&] { refuse_best_table(d / "x.best.csv"); });
  EXPECT_NE(msg.find("is a best table"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'" + (d / "x.csv") + "'"), std::string::npos) << msg;
  spit(d / "x.csv", "schema_version,device\n");
  refuse_best_table(d / "x.csv");  // a results CSV passes
}

TEST(values_enter, the_no_gpu_hint_keeps_the_users_options) {
  EXPECT_EQ(shell_words({"--shape", "1,8,512,64", "--space", "block_m=64", "it's"}),
            "--shape 1,8,512,64 --space block_m=64 'it'\\''s'");
  EXPECT_EQ(parsed({"--shape", "1,8,512,64", "--causal"}).arguments,
            (std::vector<std::string>{"--shape", "1,8,512,64", "--causal"}));
}

TEST(values_enter, bench_names_and_arguments) {
  record r;
  r.family = "fa2";
  r.shape.batch = 2, r.shape.heads = 32, r.shape.kv_heads = 8, r.shape.q_len = 1024, r.shape.kv_len = 1024;
  r.shape.head_dim = 128, r.shape.causal = true;
  r.config = {128, 64, 4, 2};
  const std::string n = benchmark_name(r);
  EXPECT_EQ(n, "fa2.B2_H32-8_N1024_D128_bf16_bhsd_causal.m128_n64_w4_s2");
  EXPECT_EQ(n.find_first_of(" /"), std::string::npos);
  const auto a = parse_bench_arguments({"r.csv", "--device", "1", "--benchmark_min_time=0.5s"});
  EXPECT_EQ(a.results, "r.csv");
  EXPECT_EQ(a.device, 1);
  EXPECT_TRUE(a.min_time_given);
  EXPECT_FALSE(parse_bench_arguments({"--device=0", "r.csv"}).min_time_given);
  EXPECT_NE(invalid_input_message([] { parse_bench_arguments({"r.csv", "--device", "-1"}); }).find("'-1'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { parse_bench_arguments({}); }).find("usage: attn-bench RESULTS.csv"),
            std::string::npos);
}

}  // namespace
}  // namespace attn
