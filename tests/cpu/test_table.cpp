#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/table.hpp"

namespace attn {
namespace {

record make(status s, double median_ms, tile_config c, std::string message = "") {
  record r;
  r.status = s;
  r.median_ms = median_ms;
  r.iqr_ms = median_ms / 100;
  r.tflops = median_ms > 0 ? 1.0 / median_ms : 0;
  r.config = c;
  r.message = std::move(message);
  if (s != status::pruned && s != status::compile_error) {
    r.registers = 128;
    r.spill_bytes = 0;
  }
  r.shared_memory_bytes = 49152;
  return r;
}

// Every status, with ok rows out of time order and ties, in an order unlike the ranked one.
std::vector<record> mixed_rows() {
  return {
      make(status::pruned, 0, {64, 32, 4, 1}, "needs 300 KiB of shared memory"),
      make(status::ok, 0.9, {64, 64, 4, 2}),
      make(status::compiled, 0, {64, 128, 4, 3}),
      make(status::wrong, 0.3, {128, 32, 8, 1}, "max error 0.5 > allowed 0.01"),
      make(status::ok, 0.2, {128, 64, 4, 2}),
      make(status::compile_error, 0, {128, 128, 8, 4}, "ptxas error"),
      make(status::launch_error, 0, {64, 64, 8, 4}, "too many resources requested"),
      make(status::ok, 0.5, {128, 128, 4, 2}),
      make(status::ok, 0.5, {64, 32, 8, 2}),  // ties the previous row: keeps input order
  };
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(table, rank_order_by_status_then_time) {
  const auto rows = mixed_rows();
  const std::vector<size_t> expected{4, 7, 8, 1, 3, 6, 5, 2, 0};
  EXPECT_EQ(rank_order(rows), expected);
}

TEST(table, rank_order_empty) { EXPECT_TRUE(rank_order({}).empty()); }

TEST(table, format_lists_every_config_in_rank_order) {
  const auto rows = mixed_rows();
  const std::string text = format_table(rows);
  size_t previous = 0;
  for (size_t i : rank_order(rows)) {
    const std::string config = name(rows[i].config);
    const size_t at = text.find(config);
    ASSERT_NE(at, std::string::npos) << config << "\n" << text;
    EXPECT_GT(at, previous) << config << " out of order\n" << text;
    previous = at;
  }
  EXPECT_EQ(text.find("not shown"), std::string::npos) << text;
  EXPECT_NE(text.find("0.2000"), std::string::npos) << text;  // ms, 4 decimals
  EXPECT_NE(text.find("5.0"), std::string::npos) << text;     // TFLOPS, 1 decimal
  EXPECT_NE(text.find("48.0"), std::string::npos) << text;    // shared memory in KiB
  EXPECT_NE(text.find("compile_error"), std::string::npos) << text;
  EXPECT_NE(text.find("ptxas error"), std::string::npos) << text;
  // Header, rule, one line per row.
  EXPECT_EQ(lines_of(text).size(), rows.size() + 2) << text;
}

TEST(table, error_in_scientific_notation) {
  record r = make(status::ok, 1.0, {64, 64, 4, 2});
  r.max_error = 0.00123456;
  EXPECT_NE(format_table({r}).find("1.23e-03"), std::string::npos) << format_table({r});
}

TEST(table, limit_says_how_many_were_left_out) {
  const auto rows = mixed_rows();
  const std::string text = format_table(rows, 3);
  const auto order = rank_order(rows);
  for (size_t k = 0; k < order.size(); ++k) {
    const bool present = text.find(name(rows[order[k]].config)) != std::string::npos;
    EXPECT_EQ(present, k < 3) << name(rows[order[k]].config) << "\n" << text;
  }
  EXPECT_NE(text.find("6 more rows not shown"), std::string::npos) << text;
  EXPECT_EQ(lines_of(text).size(), 3u + 3u) << text;

  EXPECT_EQ(format_table(rows, rows.size()).find("not shown"), std::string::npos);
  EXPECT_NE(format_table(rows, rows.size() - 1).find("1 more row not shown"), std::string::npos);
}

TEST(table, long_message_shortened_and_width_kept) {
  auto rows = mixed_rows();
  rows[0].message = std::string(200, 'x') + "\nend";
  const std::string text = format_table(rows);
  EXPECT_EQ(text.find(std::string(60, 'x')), std::string::npos) << text;
  EXPECT_NE(text.find("x..."), std::string::npos) << text;
  for (const auto& line : lines_of(text)) EXPECT_LE(line.size(), 120u) << line;
}

TEST(table, shows_noise_how_it_was_timed_and_a_tied_winner) {
  std::vector<record> rows(2);
  for (auto& r : rows) r.status = status::ok;
  rows[0].config = {128, 64, 4, 2}, rows[0].median_ms = 1.005, rows[0].rank = 1, rows[0].tied = true;
  rows[0].noise = 0.0042, rows[0].measured = measurement::full;
  rows[1].config = {128, 64, 4, 3}, rows[1].median_ms = 1.000, rows[1].rank = 2;
  rows[1].measured = measurement::screened;
  const std::string text = format_table(rows);
  EXPECT_NE(text.find("+-%"), std::string::npos) << text;
  EXPECT_NE(text.find(" 0.4 "), std::string::npos) << text;  // 0.42% beside the median
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u) << text;
  EXPECT_NE(lines[2].find("full"), std::string::npos) << text;
  EXPECT_NE(lines[2].find("tied"), std::string::npos) << text;  // rank 1, slower: says why
  EXPECT_NE(lines[3].find("screen"), std::string::npos) << text;
  EXPECT_EQ(lines[3].find("tied"), std::string::npos) << text;
  for (const auto& line : lines) EXPECT_LE(line.size(), 120u) << line;
}

TEST(table, gbps_and_copy_columns_show_only_when_measured) {
  std::vector<record> rows = mixed_rows();
  const std::string before = format_table(rows);
  EXPECT_EQ(before.find("GB/s"), std::string::npos) << before;  // compile-only, older files
  EXPECT_EQ(before.find("%copy"), std::string::npos) << before;
  rows[4].gbps = 3210.4;  // the fastest ok row; the copy bandwidth not measured
  const std::string gbps_only = format_table(rows);
  EXPECT_NE(gbps_only.find("GB/s"), std::string::npos) << gbps_only;
  EXPECT_EQ(gbps_only.find("%copy"), std::string::npos) << gbps_only;
  rows[4].copy_fraction = 0.756;
  const std::string text = format_table(rows);
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("TFLOPS GB/s %copy "), std::string::npos) << text;
  EXPECT_NE(lines[2].find(" 5.0 3210    76 "), std::string::npos) << text;  // TFLOPS, GB/s, %
  EXPECT_NE(lines[3].find(" 2.0    -     - "), std::string::npos) << text;  // not measured: "-"
}

TEST(table, energy_columns_show_only_when_measured) {
  std::vector<record> rows = mixed_rows();
  EXPECT_EQ(format_table(rows).find("mJ/call"), std::string::npos);  // no NVML energy counter
  rows[4].joules_per_call = 0.0123, rows[4].tflops_per_watt = 1.2345;
  rows[1].joules_per_call = 0.00456;  // small: more digits
  const std::string text = format_table(rows);
  const auto lines = lines_of(text);
  EXPECT_NE(lines[0].find("mJ/call TF/W"), std::string::npos) << text;
  EXPECT_NE(lines[2].find("   12.3 1.23 "), std::string::npos) << text;
  EXPECT_NE(lines[5].find("  4.560    - "), std::string::npos) << text;
}

TEST(table, empty_rows_give_header_only) {
  const std::string text = format_table({});
  EXPECT_NE(text.find("config"), std::string::npos);
  EXPECT_EQ(lines_of(text).size(), 2u) << text;
}

}  // namespace
}  // namespace attn

TEST(RankOrder, FollowsTheTunersRanksForOkRows) {
  std::vector<attn::record> rows(3);
  for (auto& r : rows) r.status = attn::status::ok;
  rows[0].median_ms = 1.00, rows[0].rank = 2;  // fastest, but a near-tie lost to a simpler one
  rows[1].median_ms = 1.005, rows[1].rank = 1;
  rows[2].median_ms = 2.0, rows[2].rank = 3;
  EXPECT_EQ(attn::rank_order(rows), (std::vector<size_t>{1, 0, 2}));
}
