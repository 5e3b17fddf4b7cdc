#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/csv.hpp"
#include "report/csv_trailer.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, so runs in parallel or after a crash do not see old files.
class csv_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("attn_csv_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

record make_record(int i) {
  record r;
  r.device.name = "NVIDIA H200 #" + std::to_string(i);
  r.device.arch = i % 2 ? "sm_90a" : "sm_90";
  r.device.cc_major = 9 + i;
  r.device.cc_minor = i;
  r.device.sm_count = 132 - i;
  r.device.cuda_version = "13." + std::to_string(i);
  r.device.nvrtc_version = "12." + std::to_string(i + 1);
  r.family = "fa2_" + std::to_string(i);
  r.shape.batch = 2 + i;
  r.shape.heads = 32 + i;
  r.shape.kv_heads = 8 + i;
  r.shape.q_len = 4096 + i;
  r.shape.kv_len = 8192 + i;
  r.shape.head_dim = 128 + 16 * i;
  r.shape.causal = i % 2 == 1;
  r.shape.dtype = i % 2 ? dtype::fp16 : dtype::bf16;
  r.shape.layout = i % 2 ? layout::bhsd : layout::bshd;
  r.config = {128 - 8 * i, 32 + i, 8 - i, 3 + i};
  r.status = status::compiled;
  r.message = "message " + std::to_string(i);
  r.compile_ms = 123.456 + i;
  r.cached = i % 2 == 0;
  r.registers = 168 + i;
  r.spill_bytes = 24 + i;
  r.shared_memory_bytes = 98304 + i;
  r.reps = 50 + i;
  r.median_ms = 0.1 + 0.01 * i;  // not exactly representable: checks shortest round-trip
  r.iqr_ms = 1.0 / 3.0 + i;
  r.tflops = 612.34567 + i;
  r.max_error = 1.2345e-3 * (i + 1);
  r.allowed_error = 2e-2 + i;
  r.materialized_bytes = int64_t{1} << (33 + i);
  r.fused_extra_bytes = 524288 + i;
  r.memory_saving_ratio = 16384.5 + i;
  r.rank = 7 + i;
  r.kernel_hash = "00000000deadbeef";
  r.noise = 0.0125 + 0.001 * i;
  r.measured = i % 3 == 0 ? measurement::full : i % 3 == 1 ? measurement::screened : measurement::none;
  r.clocks = {1980 - i, 1755 + i, 61 + i, 412.5 + i, uint64_t{1} << (i + 2)};
  r.tied = i % 2 == 0;
  r.inputs = i % 3 == 0 ? input_kind::normal : i % 3 == 1 ? input_kind::wide : input_kind::sink;
  r.bound = i % 3 == 0 ? "naive" : i % 3 == 1 ? "rounding" : "";
  r.gbps = 3141.5 + i;
  r.copy_fraction = 0.1 * (i + 1) + 1.0 / 3.0;
  r.copy_gbps = 4267.25 + i;
  r.joules_per_call = 0.7 + 0.1 * i;
  r.tflops_per_watt = 1.0 / 7.0 + i;
  r.regime = i % 2 ? timing_regime::sustained : timing_regime::burst;
  r.settle_ms = 212.5 + i;
  return r;
}

std::vector<record> sample_records() {
  const status all[] = {status::ok,     status::wrong,        status::compile_error,
                        status::pruned, status::launch_error, status::compiled};
  std::vector<record> rows;
  for (int i = 0; i < 6; ++i) {
    rows.push_back(make_record(i));
    rows.back().status = all[i];
  }
  rows[1].message = "error 0.5, allowed \"0.01\"\nsecond line";
  rows[2].message = "  leading and trailing spaces\t ";
  rows[3].message = "";
  rows[4].max_error = std::numeric_limits<double>::infinity();
  rows[5].compile_ms = 1e-300;
  return rows;
}

void expect_same(const record& a, const record& b) {
  EXPECT_EQ(a.device.name, b.device.name);
  EXPECT_EQ(a.device.arch, b.device.arch);
  EXPECT_EQ(a.device.cc_major, b.device.cc_major);
  EXPECT_EQ(a.device.cc_minor, b.device.cc_minor);
  EXPECT_EQ(a.device.sm_count, b.device.sm_count);
  EXPECT_EQ(a.device.cuda_version, b.device.cuda_version);
  EXPECT_EQ(a.device.nvrtc_version, b.device.nvrtc_version);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.shape.batch, b.shape.batch);
  EXPECT_EQ(a.shape.heads, b.shape.heads);
  EXPECT_EQ(a.shape.kv_heads, b.shape.kv_heads);
  EXPECT_EQ(a.shape.q_len, b.shape.q_len);
  EXPECT_EQ(a.shape.kv_len, b.shape.kv_len);
  EXPECT_EQ(a.shape.head_dim, b.shape.head_dim);
  EXPECT_EQ(a.shape.causal, b.shape.causal);
  EXPECT_EQ(a.shape.dtype, b.shape.dtype);
  EXPECT_EQ(a.shape.layout, b.shape.layout);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.compile_ms, b.compile_ms);
  EXPECT_EQ(a.cached, b.cached);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.spill_bytes, b.spill_bytes);
  EXPECT_EQ(a.shared_memory_bytes, b.shared_memory_bytes);
  EXPECT_EQ(a.reps, b.reps);
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.iqr_ms, b.iqr_ms);
  EXPECT_EQ(a.tflops, b.tflops);
  EXPECT_EQ(a.max_error, b.max_error);
  EXPECT_EQ(a.allowed_error, b.allowed_error);
  EXPECT_EQ(a.materialized_bytes, b.materialized_bytes);
  EXPECT_EQ(a.fused_extra_bytes, b.fused_extra_bytes);
  EXPECT_EQ(a.memory_saving_ratio, b.memory_saving_ratio);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.kernel_hash, b.kernel_hash);
  EXPECT_EQ(a.noise, b.noise);
  EXPECT_EQ(a.measured, b.measured);
  EXPECT_EQ(a.clocks.sm_clock_before_mhz, b.clocks.sm_clock_before_mhz);
  EXPECT_EQ(a.clocks.sm_clock_after_mhz, b.clocks.sm_clock_after_mhz);
  EXPECT_EQ(a.clocks.temperature_c, b.clocks.temperature_c);
  EXPECT_EQ(a.clocks.power_w, b.clocks.power_w);
  EXPECT_EQ(a.clocks.throttle, b.clocks.throttle);
  EXPECT_EQ(a.tied, b.tied);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.bound, b.bound);
  EXPECT_EQ(a.gbps, b.gbps);
  EXPECT_EQ(a.copy_fraction, b.copy_fraction);
  EXPECT_EQ(a.copy_gbps, b.copy_gbps);
  EXPECT_EQ(a.joules_per_call, b.joules_per_call);
  EXPECT_EQ(a.tflops_per_watt, b.tflops_per_watt);
  EXPECT_EQ(a.regime, b.regime);
  EXPECT_EQ(a.settle_ms, b.settle_ms);
}

std::string read_text(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& p, const std::string& text) {
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string header_line() {
  std::string h;
  for (const auto& c : csv_columns()) h += (h.empty() ? "" : ",") + c;
  return h;
}

// Replaces the field of `column` in a CSV line that holds no quoted commas.
std::string with_field(const std::string& row, const std::string& column,
                       const std::string& value) {
  const auto& columns = csv_columns();
  std::vector<std::string> fields;
  std::stringstream in(row);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  if (!row.empty() && row.back() == ',') fields.emplace_back();  // a last field left empty
  EXPECT_EQ(fields.size(), columns.size()) << row;
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? "," : "") + (columns[i] == column ? value : fields[i]);
  return out;
}

// Runs f, expects std::runtime_error, and returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than std::runtime_error";
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

TEST(csv, columns_are_the_documented_ones) {
  // clang-format off
  const std::vector<std::string> expected{
      "schema_version", "device", "arch", "cc", "sm_count", "cuda_version", "nvrtc_version",
      "family", "batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim", "dtype", "layout",
      "causal", "config", "block_m", "block_n", "warps", "stages", "status", "message",
      "compile_ms", "cached", "registers", "spill_bytes", "shared_memory_bytes", "reps",
      "median_ms", "iqr_ms", "tflops", "max_error", "allowed_error", "materialized_bytes",
      "fused_extra_bytes", "memory_saving_ratio", "rank", "kernel_hash",
      "noise", "measured", "sm_clock_before_mhz", "sm_clock_after_mhz", "temperature_c", "power_w",
      "throttle", "tied", "inputs", "bound", "gbps", "copy_fraction", "copy_gbps",
      "joules_per_call", "tflops_per_watt", "regime", "settle_ms", "page_size", "kv_lens",
      "window_left", "window_right", "softcap", "head_dim_v", "seqlens", "kv_seqlens", "pass"};
  // clang-format on
  EXPECT_EQ(csv_columns(), expected);
}

TEST(csv, status_names_round_trip) {
  for (status s : {status::ok, status::wrong, status::compile_error, status::pruned,
                   status::launch_error, status::compiled})
    EXPECT_EQ(parse_status(to_string(s)), s);
  EXPECT_EQ(to_string(status::launch_error), "launch_error");
  EXPECT_THROW(parse_status("fine"), invalid_input);
}

TEST(csv, row_format) {
  record r = make_record(0);
  r.device.cc_major = 9;
  r.device.cc_minor = 0;
  r.config = {128, 64, 4, 2};
  r.message = "a,b";
  const std::string row = csv_row(r);
  EXPECT_EQ(row.rfind(std::to_string(csv_schema_version) + ",NVIDIA H200 #0,sm_90,9.0,", 0), 0u) << row;
  EXPECT_NE(row.find(",7,00000000deadbeef,0.0125,full,1980,1755,61,412.5,4,1"), std::string::npos)
      << row;  // rank, kernel hash, then (schema 4) noise, measured, clocks, tied
  EXPECT_NE(row.find(",1,normal,naive,"), std::string::npos) << row;  // (schema 5) inputs, bound
  r.copy_fraction = 0.75, r.tflops_per_watt = 1.25;
  // (schema 6) gbps, copy_fraction, copy_gbps, joules_per_call, tflops_per_watt, regime, settle_ms,
  // page_size, kv_lens; (schema 7) window_left, window_right, softcap; (schema 8) head_dim_v; (schema 9) seqlens,
  // kv_seqlens; (schema 10) pass
  const std::string rates = csv_row(r), tail = ",naive,3141.5,0.75,4267.25,0.7,1.25,burst,212.5,0,,-1,-1,0,0,,,fwd";
  EXPECT_EQ(rates.substr(rates.size() - tail.size()), tail) << rates;
  EXPECT_NE(row.find(",bf16,bshd,0,m128_n64_w4_s2,128,64,4,2,"), std::string::npos) << row;
  EXPECT_NE(row.find(",\"a,b\","), std::string::npos) << row;
  EXPECT_EQ(row.find('\n'), std::string::npos);
}

TEST_F(csv_test, round_trip) {
  const std::vector<record> rows = sample_records();
  const std::string p = path("sub/dir/results.csv");  // parents do not exist yet
  write_csv(p, rows);

  const std::string text = read_text(p);
  EXPECT_EQ(text.substr(0, text.find('\n')), header_line());
  EXPECT_FALSE(fs::exists(p + ".tmp"));

  const std::vector<record> back = read_csv(p);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    record expected = rows[i];
    if (i == 1) expected.message = "error 0.5, allowed \"0.01\" second line";  // newline -> space
    expect_same(back[i], expected);
  }
}

// A file of an older schema: its first `columns` columns, its version in every row.
std::string older_file(int version, size_t columns) {
  const auto& names = csv_columns();
  std::string header, row = csv_row(make_record(1));
  for (size_t i = 0; i < columns; ++i) header += (i ? "," : "") + names[i];
  row = std::to_string(version) + row.substr(row.find(','));
  for (size_t cut = columns; cut < names.size(); ++cut) row.erase(row.rfind(','));
  return header + "\n" + row + "\n";
}

TEST_F(csv_test, schema_3_files_are_still_read) {
  // A file written before the noise and clock columns: the first 40 columns, version 3.
  fs::create_directories(dir_);
  std::ofstream(path("v3.csv")) << older_file(3, 40);
  const auto back = read_csv(path("v3.csv"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].kernel_hash, "00000000deadbeef");
  EXPECT_EQ(back[0].measured, measurement::none);
  EXPECT_EQ(back[0].noise, 0.0);
  EXPECT_EQ(back[0].inputs, input_kind::normal);
}

TEST_F(csv_test, schema_4_files_are_read_as_checked_on_normal_inputs) {
  // Before --inputs (issue 11, item 14) every check ran on standard-normal inputs.
  const std::string file = older_file(4, 48);
  write_text(path("v4.csv"), file + csv_trailer(file, 1));
  const auto back = read_csv(path("v4.csv"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].tied == false && back[0].noise == make_record(1).noise);
  EXPECT_EQ(back[0].inputs, input_kind::normal);
  EXPECT_EQ(back[0].bound, "");
  // A schema 4 file without its end line was cut short: refused, not read with a warning.
  write_text(path("v4-cut.csv"), file);
  EXPECT_NE(error_of([&] { read_csv(path("v4-cut.csv")); }).find("no '#end' line"), std::string::npos);
}

TEST_F(csv_test, schema_5_files_are_read_without_the_roofline_and_the_energy) {
  // Before the GB/s and energy columns (issue 18 item 5, issue 19 item 3): they read as 0.
  const std::string file = older_file(5, 50);
  write_text(path("v5.csv"), file + csv_trailer(file, 1));
  const auto back = read_csv(path("v5.csv"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].bound, make_record(1).bound);
  EXPECT_EQ(back[0].inputs, input_kind::wide);
  EXPECT_EQ(back[0].gbps, 0.0);
  EXPECT_EQ(back[0].copy_fraction, 0.0);
  EXPECT_EQ(back[0].copy_gbps, 0.0);
  EXPECT_EQ(back[0].joules_per_call, 0.0);
  EXPECT_EQ(back[0].tflops_per_watt, 0.0);
  EXPECT_EQ(back[0].regime, timing_regime::burst);  // the only regime there was
  EXPECT_EQ(back[0].settle_ms, 0.0);
}

TEST_F(csv_test, a_header_that_lacks_one_of_a_schemas_columns_is_refused_naming_it) {
  fs::create_directories(dir_);
  const auto& columns = csv_columns();
  // "settle_ms" (schema 6), "bound" (schema 5), "tied" (schema 4)
  const size_t settle_ms = std::find(columns.begin(), columns.end(), "settle_ms") - columns.begin();
  for (const size_t lacking : {settle_ms, size_t{49}, size_t{47}}) {
    std::string partial;
    for (size_t i = 0; i < columns.size(); ++i)
      if (i != lacking) partial += (partial.empty() ? "" : ",") + columns[i];
    std::ofstream(path("partial.csv")) << partial << "\n";
    const std::string msg = error_of([&] { read_csv(path("partial.csv")); });
    EXPECT_NE(msg.find("lacks column '" + columns[lacking] + "'"), std::string::npos) << msg;
  }
}

TEST_F(csv_test, bad_inputs_and_bound_fields_are_refused_naming_the_column) {
  const std::string row = csv_row(make_record(0));
  for (const auto& [column, value] : {std::pair<std::string, std::string>{"inputs", "gaussian"}, {"bound", "loose"},
                                      {"regime", "steady"}}) {
    const std::string text = header_line() + "\n" + with_field(row, column, value) + "\n";
    write_text(path("bad.csv"), text + csv_trailer(text, 1));
    const std::string msg = error_of([&] { read_csv(path("bad.csv")); });
    EXPECT_NE(msg.find("column '" + column + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(value), std::string::npos) << msg;
  }
}

TEST_F(csv_test, nan_survives) {
  std::vector<record> rows{make_record(0)};
  rows[0].max_error = std::numeric_limits<double>::quiet_NaN();
  write_csv(path("nan.csv"), rows);
  const auto back = read_csv(path("nan.csv"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(std::isnan(back[0].max_error));
}

TEST_F(csv_test, empty_list_writes_header_only) {
  write_csv(path("empty.csv"), {});
  const std::string text = read_text(path("empty.csv"));
  EXPECT_EQ(text.substr(0, text.find('\n') + 1), header_line() + "\n");
  EXPECT_EQ(text.substr(text.find('\n') + 1, 12), "#end,rows=0,");
  EXPECT_TRUE(read_csv(path("empty.csv")).empty());
}

TEST_F(csv_test, overwrite_replaces_old_content) {
  write_csv(path("r.csv"), sample_records());
  write_csv(path("r.csv"), {make_record(3)});
  EXPECT_EQ(read_csv(path("r.csv")).size(), 1u);
  EXPECT_FALSE(fs::exists(path("r.csv.tmp")));
}

TEST_F(csv_test, missing_file) {
  const std::string p = path("does_not_exist.csv");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

TEST_F(csv_test, header_missing_a_column) {
  const std::string p = path("missing_column.csv");
  std::string header = header_line();
  header.replace(header.find(",tflops,"), 8, ",");
  write_text(p, header + "\n");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("tflops"), std::string::npos) << msg;
}

TEST_F(csv_test, header_with_unknown_column) {
  const std::string p = path("extra_column.csv");
  write_text(p, header_line() + ",surprise\n");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("surprise"), std::string::npos) << msg;
}

TEST_F(csv_test, empty_file) {
  const std::string p = path("empty_file.csv");
  write_text(p, "");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

TEST_F(csv_test, unknown_schema_version) {
  const std::string p = path("future.csv");
  write_text(
      p, header_line() + "\n" + with_field(csv_row(make_record(0)), "schema_version", "99") + "\n");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
}

TEST_F(csv_test, bad_numeric_field) {
  const std::string p = path("bad_number.csv");
  write_text(p, header_line() + "\n" + csv_row(make_record(0)) + "\n" +
                    with_field(csv_row(make_record(1)), "median_ms", "0.1x") + "\n");
  const std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("median_ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.1x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
}

TEST_F(csv_test, bad_flag_and_config_mismatch) {
  const std::string p = path("bad_flag.csv");
  write_text(p, header_line() + "\n" + with_field(csv_row(make_record(0)), "causal", "2") + "\n");
  std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("causal"), std::string::npos) << msg;

  write_text(p, header_line() + "\n" + with_field(csv_row(make_record(0)), "warps", "16") + "\n");
  msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("config"), std::string::npos) << msg;
}

TEST_F(csv_test, bad_enum_and_short_row) {
  const std::string p = path("bad_enum.csv");
  write_text(p, header_line() + "\n" + with_field(csv_row(make_record(0)), "dtype", "fp64") + "\n");
  std::string msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("fp64"), std::string::npos) << msg;

  write_text(p, header_line() + "\n1,dev,sm_90\n");
  msg = error_of([&] { read_csv(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

TEST_F(csv_test, check_writable_ok_leaves_nothing) {
  const std::string p = path("new/dir/out.csv");
  check_writable(p);
  EXPECT_TRUE(fs::is_directory(path("new/dir")));
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(csv_test, check_writable_rejects_a_directory) {
  fs::create_directories(path("a_dir"));
  const std::string msg = error_of([&] { check_writable(path("a_dir")); });
  EXPECT_NE(msg.find(path("a_dir")), std::string::npos) << msg;
}

TEST(csv, check_writable_unwritable_path) {
  const std::string p = "/proc/nonexistent/x.csv";
  const std::string msg = error_of([&] { check_writable(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

TEST(csv, write_csv_unwritable_path) {
  const std::string p = "/proc/nonexistent/x.csv";
  const std::string msg = error_of([&] { write_csv(p, {make_record(0)}); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

}  // namespace
}  // namespace attn
