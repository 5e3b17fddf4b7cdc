// Results CSVs check themselves: a copy cut at a row boundary or inside a field is refused,
// naming the file and the line (issue 11, item 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "report/csv.hpp"
#include "report/csv_trailer.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

std::vector<record> rows_of(int n) {
  std::vector<record> rows;
  for (int i = 0; i < n; ++i) {
    record r;
    r.device = {"NVIDIA H200", "sm_90a", 9, 0, 132, "13.0", "13.0"};
    r.family = "fa2";
    r.shape.batch = 1 + i;
    r.config = {64, 64, 4, 1};
    r.status = status::ok;
    r.median_ms = 1.25 + i;
    r.tflops = 300.5 + i;
    r.rank = 1;
    r.kernel_hash = "00000000deadbeef";
    rows.push_back(r);
  }
  return rows;
}

std::string error_of(const std::string& path) {
  try {
    read_csv(path);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "";
}

// The first `lines` lines of text, each with its newline.
std::string head(const std::string& text, int lines) {
  size_t end = 0;
  for (int i = 0; i < lines; ++i) end = text.find('\n', end) + 1;
  return text.substr(0, end);
}

TEST(digest, xxh3_128_is_known_and_128_bits) {
  EXPECT_EQ(xxh3_128_hex(""), "99aa06d3014798d86001c324468d497f");  // XXH3_128bits of no bytes
  EXPECT_EQ(xxh3_128_hex("abc").size(), 32u);
  EXPECT_NE(xxh3_128_hex("abc"), xxh3_128_hex("abd"));
}

TEST(csv_end_line, a_whole_file_reads_back) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(5));
  const std::string text = slurp(d / "r.csv");
  EXPECT_EQ(text.substr(text.rfind("#end"), 12), "#end,rows=5,");
  EXPECT_EQ(read_csv(d / "r.csv").size(), 5u);
}

TEST(csv_end_line, cut_at_a_row_boundary_is_refused_naming_file_and_line) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(5));
  spit(d / "t.csv", head(slurp(d / "r.csv"), 4));  // header + 3 rows
  const std::string msg = error_of(d / "t.csv");
  EXPECT_NE(msg.find(d / "t.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("incomplete"), std::string::npos) << msg;
}

TEST(csv_end_line, cut_inside_the_last_field_is_refused) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(5));
  const std::string text = head(slurp(d / "r.csv"), 5);
  spit(d / "t.csv", text.substr(0, text.size() - 5));  // half of the last hash
  const std::string msg = error_of(d / "t.csv");
  EXPECT_NE(msg.find("line 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("incomplete"), std::string::npos) << msg;
  // and inside an early field of the last row (too few columns)
  spit(d / "t.csv", text.substr(0, text.rfind('\n', text.size() - 2) + 20));
  EXPECT_NE(error_of(d / "t.csv").find("incomplete"), std::string::npos) << error_of(d / "t.csv");
}

TEST(csv_end_line, a_changed_row_or_count_is_refused) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(3));
  std::string text = slurp(d / "r.csv");
  std::string changed = text;
  changed.replace(changed.find("300.5"), 5, "900.5");  // a different config would win
  spit(d / "t.csv", changed);
  std::string msg = error_of(d / "t.csv");
  EXPECT_NE(msg.find("line 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("checksum"), std::string::npos) << msg;
  // a row dropped and the end line rewritten with the right checksum but the old count
  const std::string body = head(text, 3);
  spit(d / "t.csv", body + "#end,rows=3,xxh3=" + xxh3_128_hex(body) + "\n");
  msg = error_of(d / "t.csv");
  EXPECT_NE(msg.find("says 3 rows, the file has 2"), std::string::npos) << msg;
  spit(d / "t.csv", body + "#end,rows=two\n");
  EXPECT_NE(error_of(d / "t.csv").find("expected #end,rows=N,xxh3=HEX"), std::string::npos);
}

// A schema 3 file: the columns before "noise", schema_version 3, no end line (rows_of's fields
// hold no comma, so the lines split at every one).
std::string schema_3_text(const std::string& current_text, size_t lines) {
  const auto& columns = csv_columns();
  const size_t keep = static_cast<size_t>(std::find(columns.begin(), columns.end(), "noise") - columns.begin());
  std::string out;
  std::istringstream in(head(current_text, lines));
  for (std::string line; std::getline(in, line);) {
    size_t cut = 0;
    for (size_t k = 0; k < keep; ++k) cut = line.find(',', cut) + 1;
    line.resize(cut - 1);
    if (!out.empty()) line = "3" + line.substr(line.find(','));  // the version, of one digit or more
    out += line + "\n";
  }
  return out;
}

TEST(csv_end_line, a_schema_3_file_without_one_reads_with_a_warning) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(2));
  spit(d / "old.csv", schema_3_text(slurp(d / "r.csv"), 3));
  testing::internal::CaptureStderr();
  EXPECT_EQ(read_csv(d / "old.csv").size(), 2u);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("warning: '" + (d / "old.csv") + "' has no '#end' line"), std::string::npos) << warning;
}

// Issue 21, item 6: a file cut right after its header is refused, whatever the header's schema,
// and so is a header of the current schema without an end line.
TEST(csv_end_line, a_header_alone_is_refused) {
  temp_dir d;
  write_csv(d / "r.csv", rows_of(2));
  spit(d / "cut.csv", head(slurp(d / "r.csv"), 1));
  EXPECT_NE(error_of(d / "cut.csv").find("line 1 is its last and there is no '#end' line"), std::string::npos)
      << error_of(d / "cut.csv");
  spit(d / "old.csv", schema_3_text(slurp(d / "r.csv"), 1));
  EXPECT_NE(error_of(d / "old.csv").find("there is no '#end' line"), std::string::npos) << error_of(d / "old.csv");
  std::string rows_as_3 = head(slurp(d / "r.csv"), 3);  // today's header, rows claiming schema 3
  const std::string current = "\n" + std::to_string(csv_schema_version) + ",";
  for (size_t at = rows_as_3.find(current); at != std::string::npos; at = rows_as_3.find(current, at + 1))
    rows_as_3.replace(at, current.size(), "\n3,");
  spit(d / "mixed.csv", rows_as_3);
  EXPECT_NE(error_of(d / "mixed.csv").find("there is no '#end' line"), std::string::npos) << error_of(d / "mixed.csv");
}

TEST(csv_end_line, split_trailer_and_line_numbers) {
  EXPECT_EQ(last_line_number(""), 0u);
  EXPECT_EQ(last_line_number("a\nb\n"), 2u);
  EXPECT_EQ(last_line_number("a\nb"), 2u);
  const std::string body = "h\nrow\n";
  const std::string file = body + csv_trailer(body, 1);
  const csv_body b = split_trailer("x.csv", file);
  EXPECT_EQ(b.text, body);
  ASSERT_TRUE(b.rows);
  EXPECT_EQ(*b.rows, 1u);
  EXPECT_FALSE(split_trailer("x.csv", body).rows);
}

}  // namespace
}  // namespace attn
