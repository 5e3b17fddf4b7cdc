// Best tables, export formats and the CI gate's verdicts, on synthetic results.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "check/verdict.hpp"
#include "report/best_table.hpp"
#include "report/export.hpp"

namespace attn {
namespace {

record variant(int64_t n, tile_config c, double ms, int rank, status st = status::ok) {
  record r;
  r.shape.batch = 2, r.shape.heads = 8, r.shape.kv_heads = 8, r.shape.q_len = r.shape.kv_len = n;
  r.shape.head_dim = 128;
  r.device.name = "NVIDIA H200", r.device.cc_major = 9, r.device.sm_count = 132;
  r.config = c;
  r.status = st;
  r.median_ms = ms;
  r.tflops = 100.0 / ms;
  r.rank = rank;
  r.kernel_hash = "0123456789abcdef";
  return r;
}

TEST(best_table, one_row_per_shape_with_runner_up_and_gap) {
  const std::vector<record> rows = {variant(1024, {64, 64, 4, 2}, 1.0, 2), variant(1024, {128, 64, 4, 2}, 0.9, 1),
                                    variant(1024, {128, 128, 8, 2}, 0.5, 0, status::wrong),
                                    variant(2048, {128, 64, 4, 2}, 3.0, 1)};
  const auto t = best_table(rows);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].best.config, (tile_config{128, 64, 4, 2}));  // the wrong, faster one never wins
  ASSERT_TRUE(t[0].runner_up.has_value());
  EXPECT_EQ(t[0].runner_up->config, (tile_config{64, 64, 4, 2}));
  EXPECT_NEAR(t[0].runner_up_gap, 1.0 / 0.9 - 1, 1e-12);
  EXPECT_FALSE(t[1].runner_up.has_value());
}

TEST(export, buckets_are_powers_of_two) {
  EXPECT_EQ(seq_bucket(1), 1);
  EXPECT_EQ(seq_bucket(512), 512);
  EXPECT_EQ(seq_bucket(513), 1024);
  EXPECT_EQ(seq_bucket(16384), 16384);
}

TEST(export, one_entry_per_key_majority_config) {
  // Three shapes in the (512, 1024] bucket: two chose m128_n64_w4_s2, one m64_n64_w4_s2.
  std::vector<record> rows = {variant(1024, {128, 64, 4, 2}, 1.0, 1), variant(1000, {64, 64, 4, 2}, 1.0, 1),
                              variant(600, {128, 64, 4, 2}, 1.0, 1), variant(2048, {256, 64, 8, 2}, 1.0, 1)};
  rows[1].shape.heads = rows[1].shape.kv_heads = 16;  // other shapes, same key
  rows[2].shape.batch = 4;
  const auto e = export_entries(best_table(rows));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].config, (tile_config{128, 64, 4, 2}));
  EXPECT_EQ(e[0].seq_min, 512);
  EXPECT_EQ(e[0].seq_max, 1024);
  EXPECT_EQ(e[0].shapes, 3);
  EXPECT_EQ(e[1].config, (tile_config{256, 64, 8, 2}));
  const std::string csv = export_csv(e), json = export_json(e), header = export_header(e, "x.csv");
  EXPECT_NE(csv.find("\"NVIDIA H200\",9.0,132,bf16,128,0,-1,-1,0,0,fwd,512,1024,512,1024,fa2,128,64,4,2"), std::string::npos) << csv;
  const auto doc = nlohmann::json::parse(json);  // real JSON
  bool found = false;
  for (const auto& entry : doc["entries"])
    found |= entry["seq_max"] == 2048 && entry["config"]["family"] == "fa2" && entry["config"]["block_m"] == 256;
  EXPECT_TRUE(found) << json;
  EXPECT_NE(header.find("inline config lookup("), std::string::npos);
  EXPECT_NE(header.find("{\"NVIDIA H200\", 9, 0, 132, \"bf16\", 128, false, -1, -1, 0, 0, \"fwd\", 512, 1024, 512, 1024LL, {\"fa2\", 128, 64, 4, 2}}"),
            std::string::npos)
      << header;
}

TEST(export, the_family_travels_with_the_config) {
  // Same key, the same config name in two families: wgmma won twice, fa2 once.
  std::vector<record> rows = {variant(4096, {128, 64, 8, 2}, 1.0, 1), variant(4000, {128, 64, 8, 2}, 1.0, 1),
                              variant(3000, {128, 64, 8, 2}, 1.0, 1)};
  rows[0].family = rows[1].family = "wgmma";
  rows[1].shape.batch = rows[2].shape.batch = 2;
  rows[2].shape.heads = rows[2].shape.kv_heads = 8;
  const auto e = export_entries(best_table(rows));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].family, "wgmma");
  EXPECT_NE(export_csv(e).find(",wgmma,128,64,8,2,"), std::string::npos) << export_csv(e);
  EXPECT_EQ(nlohmann::json::parse(export_json(e))["entries"][0]["config"]["family"], "wgmma");
  EXPECT_NE(export_header(e, "x.csv").find("{\"wgmma\", 128, 64, 8, 2}"), std::string::npos);
}

TEST(export, a_family_knob_travels_too) {
  std::vector<record> rows = {variant(1024, {64, 32, 4, 1, 2}, 1.0, 1)};
  rows[0].family = "mfma";
  const auto e = export_entries(best_table(rows));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(export_csv(e).find(",mfma,64,32,4,1,2,"), std::string::npos) << export_csv(e);
  EXPECT_EQ(nlohmann::json::parse(export_json(e))["entries"][0]["config"]["knob"], 2) << export_json(e);
  EXPECT_NE(export_header(e, "x.csv").find("{\"mfma\", 64, 32, 4, 1, 2}"), std::string::npos);
}

TEST(export, fallback_fits_every_head_dim) {
  EXPECT_EQ(fallback_config(64), (tile_config{128, 64, 4, 2}));
  EXPECT_EQ(fallback_config(256), (tile_config{64, 64, 4, 1}));
}

TEST(verdict, within_tolerance_passes) {
  const auto j = judge(1.0, status::ok, 1.05, std::nullopt, 0.10);
  EXPECT_EQ(j.v, verdict::pass);
  EXPECT_NEAR(j.ratio, 1.05, 1e-12);
}

TEST(verdict, confirmed_regression_fails) {
  // The gate's own test: numbers that miss the baseline by more than the tolerance must fail.
  EXPECT_TRUE(suspect(1.0, 1.2, 0.10));
  const auto j = judge(1.0, status::ok, 1.2, 1.18, 0.10);
  EXPECT_EQ(j.v, verdict::regression);
  EXPECT_NEAR(j.ratio, 1.18, 1e-12);
  EXPECT_NE(j.why.find("confirmed"), std::string::npos);
}

TEST(verdict, noise_is_not_a_regression) {
  // First look 15% slow, second look fine: the better measurement counts.
  const auto j = judge(1.0, status::ok, 1.15, 1.02, 0.10);
  EXPECT_EQ(j.v, verdict::pass);
  EXPECT_NE(j.why.find("noise"), std::string::npos);
}

TEST(verdict, improvement_is_reported) {
  EXPECT_EQ(judge(1.0, status::ok, 0.8, std::nullopt, 0.10).v, verdict::improved);
}

TEST(verdict, wrong_results_fail_whatever_the_time) {
  EXPECT_EQ(judge(1.0, status::wrong, 0.5, std::nullopt, 0.10).v, verdict::wrong);
  EXPECT_EQ(judge(1.0, status::launch_error, 0.0, std::nullopt, 0.10).v, verdict::wrong);
}

TEST(verdict, baseline_from_another_device_is_not_compared) {
  const record base = variant(1024, {128, 64, 4, 2}, 1.0, 1);
  device_desc here = base.device;
  EXPECT_FALSE(incomparable(base, here).has_value());
  here.name = "NVIDIA H100 80GB HBM3";
  ASSERT_TRUE(incomparable(base, here).has_value());
  EXPECT_NE(incomparable(base, here)->find("H100"), std::string::npos);
  here = base.device;
  here.sm_count = 114;
  EXPECT_TRUE(incomparable(base, here).has_value());
  record other_family = base;
  other_family.family = "mfma";
  EXPECT_TRUE(incomparable(other_family, base.device).has_value());
  record unknown_family = base;
  unknown_family.family = "fa9";
  EXPECT_NE(incomparable(unknown_family, base.device).value_or("").find("does not have"), std::string::npos);
  record hopper = base;  // a wgmma baseline compares on the Hopper GPU it was measured on
  hopper.family = "wgmma";
  hopper.device.cc_major = 9, hopper.device.cc_minor = 0, hopper.device.arch = "sm_90a";
  EXPECT_FALSE(incomparable(hopper, hopper.device).has_value()) << *incomparable(hopper, hopper.device);
  record ampere = hopper;
  ampere.device.cc_major = 8;
  EXPECT_NE(incomparable(ampere, ampere.device).value_or("").find("does not run on"), std::string::npos);
}

TEST(verdict, changed_kernel_sources_are_said) {
  const record base = variant(1024, {128, 64, 4, 2}, 1.0, 1);
  EXPECT_FALSE(kernel_change(base, "0123456789abcdef").has_value());
  ASSERT_TRUE(kernel_change(base, "fedcba9876543210").has_value());
  EXPECT_NE(kernel_change(base, "fedcba9876543210")->find("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace attn
