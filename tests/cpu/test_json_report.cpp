// --json and export --format json are real JSON (nlohmann), and every CSV quotes its text the
// same way; a device name with quotes breaks neither them nor the exported C++ header (issue 11,
// item 8).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "report/export.hpp"
#include "report/json_report.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

const std::string odd_name = "NVIDIA \"H200\" \\ 141GB, rev 2";

std::vector<record> two_variants() {
  std::vector<record> rows(2);
  for (int i = 0; i < 2; ++i) {
    record& r = rows[i];
    r.device = {odd_name, "sm_90a", 9, 0, 132, "13.0", "13.0"};
    r.family = "fa2";
    r.shape.batch = 1, r.shape.heads = 8, r.shape.kv_heads = 8, r.shape.q_len = r.shape.kv_len = 512;
    r.shape.head_dim = 64;
    r.config = {64, 64, 4, 1 + i};
    r.status = status::ok;
    r.median_ms = 1.0 + i;
    r.tflops = 100.0 - i;
    r.rank = 1 + i;
    r.max_error = i ? std::numeric_limits<double>::quiet_NaN() : 1e-3;
    r.message = "a \"quoted\", message";
  }
  return rows;
}

TEST(json_report, results_hold_metadata_every_variant_and_the_best) {
  run_metadata m;
  m.command = "tune";
  m.seed = 18446744073709551615ull;
  m.device = two_variants()[0].device;
  m.sm_clock_mhz = 1980;
  m.arguments = {"--shape", "1,8,512,64"};
  const auto doc = nlohmann::json::parse(results_json(m, two_variants()));
  EXPECT_EQ(doc["run"]["seed"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(doc["run"]["device"]["name"], odd_name);
  EXPECT_EQ(doc["run"]["sm_clock_mhz"], 1980);
  ASSERT_EQ(doc["variants"].size(), 2u);
  EXPECT_EQ(doc["variants"][0]["message"], "a \"quoted\", message");
  EXPECT_TRUE(doc["variants"][1]["max_error"].is_null());  // NaN is not JSON
  ASSERT_EQ(doc["best"].size(), 1u);
  EXPECT_EQ(doc["best"][0]["config"], "m64_n64_w4_s1");
  EXPECT_EQ(doc["best"][0]["runner_up"], "fa2 m64_n64_w4_s2");
  // No copy bandwidth measured: null and why, never a number that looks measured.
  EXPECT_TRUE(doc["run"]["copy_bandwidth"]["gbps"].is_null());
  EXPECT_EQ(doc["run"]["copy_bandwidth"]["note"], "not measured");
}

TEST(json_report, the_runs_copy_bandwidth_and_each_variants_rates) {
  run_metadata m;
  m.copy = {4267.5, int64_t(1) << 30, 5, ""};
  std::vector<record> rows = two_variants();
  rows[0].gbps = 3200.25, rows[0].copy_fraction = 0.75, rows[0].copy_gbps = 4267.5;
  const auto doc = nlohmann::json::parse(results_json(m, rows));
  EXPECT_EQ(doc["run"]["copy_bandwidth"]["gbps"], 4267.5);
  EXPECT_EQ(doc["run"]["copy_bandwidth"]["bytes"], int64_t(1) << 30);
  EXPECT_EQ(doc["run"]["copy_bandwidth"]["reps"], 5);
  EXPECT_NE(doc["run"]["copy_bandwidth"]["convention"].get<std::string>().find("2 x bytes"), std::string::npos);
  EXPECT_EQ(doc["variants"][0]["gbps"], 3200.25);
  EXPECT_EQ(doc["variants"][0]["copy_fraction"], 0.75);
  EXPECT_EQ(doc["variants"][0]["copy_gbps"], 4267.5);
  EXPECT_EQ(doc["variants"][1]["copy_fraction"], 0.0);
}

TEST(json_report, the_objective_the_energy_and_why_it_is_missing) {
  run_metadata m;
  m.objective = "energy";
  std::vector<record> rows = two_variants();
  rows[0].joules_per_call = 0.7, rows[0].tflops_per_watt = 1.5;
  auto doc = nlohmann::json::parse(results_json(m, rows));
  EXPECT_EQ(doc["run"]["objective"], "energy");
  EXPECT_EQ(doc["run"]["regime"], "burst");
  EXPECT_EQ(doc["variants"][0]["regime"], "burst");
  EXPECT_EQ(doc["run"]["energy"], "measured");
  EXPECT_EQ(doc["variants"][0]["joules_per_call"], 0.7);
  EXPECT_EQ(doc["variants"][0]["tflops_per_watt"], 1.5);
  m.energy_note = "note: NVML absent (...)";
  doc = nlohmann::json::parse(results_json(m, two_variants()));
  EXPECT_EQ(doc["run"]["energy"], "note: NVML absent (...)");
  EXPECT_EQ(doc["variants"][0]["joules_per_call"], 0.0);
}

// Issue 21, item 22: each variant carries every column of the CSV (the device's are the run's, the
// problem's fields its "shape").
TEST(json_report, every_csv_column_is_in_each_variant) {
  std::vector<record> rows = two_variants();
  rows[0].noise = 0.004, rows[0].measured = measurement::full, rows[0].tied = true;
  rows[0].clocks = {1980, 1830, 61, 512.5, 4};
  const auto doc = nlohmann::json::parse(results_json({}, rows));
  const auto& v = doc["variants"][0];
  for (const std::string& column : csv_columns()) {
    if (column == "schema_version" || column == "device" || column == "arch" || column == "cc" ||
        column == "sm_count" || column == "cuda_version" || column == "nvrtc_version")
      continue;
    EXPECT_TRUE(v.contains(column) || v["shape"].contains(column)) << column;
  }
  EXPECT_EQ(v["noise"], 0.004);
  EXPECT_EQ(v["measured"], "full");
  EXPECT_EQ(v["sm_clock_after_mhz"], 1830);
  EXPECT_EQ(v["power_w"], 512.5);
  EXPECT_EQ(v["throttle"], 4);
  EXPECT_EQ(v["tied"], true);
}

TEST(json_report, check_lines) {
  const auto doc = nlohmann::json::parse(
      check_json({}, "b.csv", {{"B1 H8 N512 D64", "fa2", "m64_n64_w4_s1", "pass", "", 1.0, 1.01, 1.01}}, std::nullopt));
  EXPECT_EQ(doc["baseline"], "b.csv");
  EXPECT_EQ(doc["shapes"][0]["verdict"], "pass");
  EXPECT_TRUE(doc["kernel_change"].is_null());
}

TEST(json_report, quotes_survive_every_writer) {
  const auto entries = export_entries(best_table(two_variants()));
  EXPECT_EQ(nlohmann::json::parse(export_json(entries))["entries"][0]["device"], odd_name);
  const std::string header = export_header(entries, "x.csv");
  EXPECT_NE(header.find(R"({"NVIDIA \"H200\" \\ 141GB, rev 2", 9, 0, 132,)"), std::string::npos) << header;
  EXPECT_NE(export_csv(entries).find(R"("NVIDIA ""H200"" \ 141GB, rev 2",9.0,132,)"), std::string::npos);
  temp_dir d;
  write_best_csv(d / "b.best.csv", best_table(two_variants()));
  EXPECT_NE(slurp(d / "b.best.csv").find(R"(,"NVIDIA ""H200"" \ 141GB, rev 2",9.0,132,fa2,)"), std::string::npos)
      << slurp(d / "b.best.csv");
  write_csv(d / "r.csv", two_variants());
  EXPECT_EQ(read_csv(d / "r.csv")[0].device.name, odd_name);
  EXPECT_EQ(csv_field("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(csv_field("plain", true), "\"plain\"");
}

}  // namespace
}  // namespace attn

// Issue 21, items 17, 18 and 19: the export CSV quotes its family column, invalid UTF-8 becomes
// U+FFFD in every JSON, and the header's literals escape '?' (no trigraph can form).
namespace attn {
namespace {

std::vector<export_entry> entries_named(const std::string& device, const std::string& family = "fa2") {
  std::vector<record> rows = two_variants();
  for (auto& r : rows) r.device.name = device, r.family = family;
  return export_entries(best_table(rows));
}

TEST(export_formats, the_family_column_is_quoted) {
  const auto back = read_export_csv(export_csv(entries_named("d", "fa2,9")), "e.csv");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].family, "fa2,9");
  EXPECT_EQ(back[0].config.block_m, 64);
}

TEST(export_formats, invalid_utf8_is_replaced_in_json) {
  const std::string bad = "GPU \xff\xfe end";
  std::vector<record> rows = two_variants();
  for (auto& r : rows) r.device.name = bad;
  run_metadata meta;
  meta.arguments = {"--out", "x\xc3.csv"};
  const auto doc = nlohmann::json::parse(results_json(meta, rows));
  EXPECT_EQ(doc["run"]["arguments"][1], "x\xef\xbf\xbd.csv");
  const auto exported = nlohmann::json::parse(export_json(entries_named(bad)));
  EXPECT_EQ(exported["entries"][0]["device"], "GPU \xef\xbf\xbd\xef\xbf\xbd end");
}

TEST(export_formats, the_header_escapes_question_marks) {
  const std::string header = export_header(entries_named("X??/\"??=Y"), "from??/");
  EXPECT_EQ(header.find("??"), std::string::npos) << header;
  EXPECT_NE(header.find(R"({"X\?\?/\"\?\?=Y", 9, 0, 132,)"), std::string::npos) << header;
  if (std::system("c++ --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no C++ compiler to compile the header";
  temp_dir d;
  spit(d / "attn_tuned.hpp", header);
  spit(d / "main.cpp", "#include \"attn_tuned.hpp\"\nint main() { bool fell = true;\n"
                       "  attn_tuned::lookup(\"X\\?\\?/\\\"\\?\\?=Y\", 9, 0, 132, \"bf16\", 64, false, 512, &fell);\n"
                       "  return fell ? 1 : 0; }\n");
  const std::string build = "c++ -std=c++17 -trigraphs -DATTN_TUNED_QUIET -o " + (d / "main") + " " +
                            (d / "main.cpp") + " 2>&1";
  ASSERT_EQ(std::system(build.c_str()), 0) << header;
  EXPECT_EQ(std::system((d / "main").c_str()), 0) << "the device name did not look up";
}

}  // namespace
}  // namespace attn
