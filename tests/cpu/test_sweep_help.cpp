// `attn-tune sweep --help` names a sweep file's columns from the one field list (problem_fields()):
// every field's sweep column, those every file has before the optional ones, each with what a blank
// cell takes; and a file with exactly the columns the help names reads.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/command_options.hpp"
#include "core/problem.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

struct sweep_help {
  std::string description, help;
};

sweep_help help_of_sweep() {
  CLI::App app;
  options out;
  const subcommands c = add_subcommands(app, out);
  return {c.sweep->get_description(), c.sweep->help()};
}

// The help's line for a column: "  <column>  <what a blank cell takes>", or "" when there is none.
std::string line_of(const std::string& help, const std::string& column, size_t& at) {
  std::istringstream in(help);
  std::string line;
  for (size_t pos = 0; std::getline(in, line); pos += line.size() + 1)
    if (line.rfind("  " + column + " ", 0) == 0) {
      at = pos;
      return line;
    }
  return "";
}

// The description's column names: its words, split at blanks and commas.
std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::string word;
  for (char c : text + " ") {
    if (c == ' ' || c == ',') {
      if (!word.empty()) out.insert(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return out;
}

TEST(SweepHelp, NamesEveryColumnOfTheFieldList) {
  const sweep_help h = help_of_sweep();
  const size_t optional = h.help.find("Optional columns");
  ASSERT_NE(optional, std::string::npos) << h.help;
  const std::set<std::string> described = words(h.description);
  EXPECT_TRUE(described.count("name")) << h.description;
  size_t at = 0;
  EXPECT_NE(line_of(h.help, "name", at), "") << h.help;
  EXPECT_LT(at, optional);
  for (const problem_field& f : problem_fields()) {
    const std::string column = f.sweep_column;
    EXPECT_TRUE(described.count(column)) << column << " is not in: " << h.description;
    const std::string line = line_of(h.help, column, at);
    ASSERT_NE(line, "") << column << " has no line in:\n" << h.help;
    // The first schema's columns are in every file; a later field's column is optional.
    if (in_first_schema(f)) EXPECT_LT(at, optional) << column;
    else EXPECT_GT(at, optional) << column;
    const std::string value = f.get(problem{});
    const std::string takes = f.required       ? "a value in every row"
                              : f.follows >= 0 ? problem_fields()[static_cast<size_t>(f.follows)].sweep_column
                              : value.empty()  ? "none"
                                               : value;
    EXPECT_EQ(line.substr(line.find_first_not_of(' ', 2 + column.size())), takes) << line;
  }
}

// The header the help names (every column, in its order) reads, and its blank cells take the defaults.
TEST(SweepHelp, AFileOfTheNamedColumnsReads) {
  std::string header = "name", every_file = "name";
  for (const problem_field& f : problem_fields()) {
    header += std::string(",") + f.sweep_column;
    if (in_first_schema(f)) every_file += std::string(",") + f.sweep_column;
  }
  EXPECT_NE(help_of_sweep().description.find(every_file), std::string::npos) << every_file;
  problem want;
  want.batch = 2, want.heads = want.kv_heads = 8, want.q_len = want.kv_len = 256, want.head_dim = 64;
  std::string row = "x";
  for (const problem_field& f : problem_fields()) row += "," + (f.required ? f.get(want) : std::string());
  temp_dir dir;
  std::ofstream(dir / "sweep.csv") << header << "\n" << row << "\n";
  const auto rows = read_sweep_file(dir / "sweep.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem, want) << describe(rows[0].problem);
}

}  // namespace
}  // namespace attn
