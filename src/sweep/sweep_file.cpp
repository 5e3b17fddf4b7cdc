#include "sweep/sweep_file.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <fstream>
#include <map>

#include <libfccp/csv.h>

#include <charconv>

#include <fmt/format.h>

namespace attn {

namespace {

// A count: positive, or (zero_ok: a field whose default is 0, such as page_size) non-negative.
int64_t count(const std::string& text, const std::string& where, const char* column, bool zero_ok) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || (value == 0 && !zero_ok))
    throw invalid_input(fmt::format("{}: column '{}': '{}' is not a {} integer", where, column, text,
                                    zero_ok ? "non-negative" : "positive"));
  return value;
}

bool flag(const std::string& text, const std::string& where, const char* column) {
  if (text.empty() || text == "0" || text == "false" || text == "no") return false;
  if (text == "1" || text == "true" || text == "yes") return true;
  throw invalid_input(fmt::format("{}: column '{}': '{}' is not 0/1", where, column, text));
}

// A '#' after leading blanks starts a comment too: such a line is blanked (kept, so line
// numbers stay those of the file) before the CSV reader, which only knows '#' in column 1.
void blank_comment_lines(std::string& text) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const size_t first = text.find_first_not_of(" \t", start);
    if (!(first < end && text[first] == '#')) out.append(text, start, end - start);
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  text = std::move(out);
}

}  // namespace

std::vector<sweep_row> read_sweep_file(const std::string& path) {
  std::vector<sweep_row> rows;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw invalid_input(fmt::format("cannot read sweep file '{}': no such file or not readable", path));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  blank_comment_lines(text);
  try {
    constexpr size_t columns = 1 + problem_field_count;  // "name", then the problem's fields
    io::CSVReader<columns, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>, io::throw_on_overflow,
                  io::single_and_empty_line_comment<'#'>>
        reader(path, text.data(), text.data() + text.size());
    std::array<const char*, columns> names{"name"};
    for (size_t i = 0; i < problem_field_count; ++i) names[i + 1] = problem_fields()[i].sweep_column;
    // Every column of the first fields must be there (blank cells take defaults); a field added
    // later may lack its column, so files written before it still read.
    std::apply([&](auto... n) { reader.read_header(io::ignore_missing_column, n...); }, names);
    for (size_t i = 0; i < columns; ++i) {
      const bool later = i > 0 && !in_first_schema(problem_fields()[i - 1]);
      if (!later && !reader.has_column(names[i]))
        throw invalid_input(fmt::format("cannot read sweep file '{}': Missing column \"{}\" in header of file \"{}\".",
                                        path, names[i], path));
    }
    std::array<std::string, columns> cells;
    while (std::apply([&](auto&... c) { return reader.read_row(c...); }, cells)) {
      const std::string where = fmt::format("{}:{}", path, reader.get_file_line());
      sweep_row row;
      row.line = static_cast<int>(reader.get_file_line());
      problem& s = row.problem;
      for (size_t i = 0; i < problem_field_count; ++i) {
        const problem_field& f = problem_fields()[i];
        const std::string& cell = cells[i + 1];
        if (cell.empty() && !f.required) {
          if (f.follows >= 0) f.set(s, problem_fields()[f.follows].get(s));
          continue;
        }
        // A count: non-negative when its default is 0 (page_size), positive when 1; a field whose
        // default is -1 (a window side) is checked by its own validation.
        const std::string none = f.get(problem{});
        if (f.type == field_type::integer && none != "-1") count(cell, where, f.sweep_column, none == "0");
        const std::string text = f.type == field_type::flag ? (flag(cell, where, f.sweep_column) ? "1" : "0") : cell;
        try {
          f.set(s, text);
        } catch (const invalid_input& e) {
          throw invalid_input(fmt::format("{}: {}", where, e.what()));
        }
      }
      try {
        canonicalize(s);  // a window's right side of 0 is the causal mask
        validate(s);
      } catch (const invalid_input& e) {
        throw invalid_input(fmt::format("{}: {}", where, e.what()));
      }
      // A name is printed on the terminal: control bytes (an ANSI escape) would act there.
      if (const auto bad = std::find_if(cells[0].begin(), cells[0].end(),
                                        [](unsigned char c) { return c < 0x20 || c == 0x7f; });
          bad != cells[0].end())
        throw invalid_input(fmt::format("{}: column 'name' holds the control character 0x{:02x}; names are printed, "
                                        "so they must be plain text",
                                        where, static_cast<unsigned char>(*bad)));
      row.name = cells[0].empty() ? describe(s) : cells[0];
      rows.push_back(std::move(row));
    }
  } catch (const io::error::base& e) {
    throw invalid_input(fmt::format("cannot read sweep file '{}': {}", path, e.what()));
  }
  if (rows.empty()) throw invalid_input(fmt::format("sweep file '{}' has no rows", path));
  return rows;
}

shard_spec parse_shard(const std::string& text, const std::function<const char*(const char*)>& env) {
  auto number = [&](const std::string& v, const char* what) {
    int x = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < 0)
      throw invalid_input(fmt::format("invalid --shard '{}': {} '{}' is not a non-negative integer", text, what, v));
    return x;
  };
  shard_spec s;
  if (text == "auto") {
    auto get = [&](const char* name) -> std::string {
      const char* v = env(name);
      return v ? v : "";
    };
    if (!get("SLURM_ARRAY_TASK_ID").empty()) {
      if (get("SLURM_ARRAY_TASK_COUNT").empty())
        throw invalid_input("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
      // Slurm arrays may start at any index; SLURM_ARRAY_TASK_MIN (when set) is shard 0.
      const int min = get("SLURM_ARRAY_TASK_MIN").empty() ? 0 : number(get("SLURM_ARRAY_TASK_MIN"), "SLURM_ARRAY_TASK_MIN");
      s.index = number(get("SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID") - min;
      s.count = number(get("SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_COUNT");
    } else if (!get("JOB_COMPLETION_INDEX").empty()) {
      if (get("ATTN_TUNE_SHARDS").empty())
        throw invalid_input("--shard auto: JOB_COMPLETION_INDEX is set; set ATTN_TUNE_SHARDS to the job's completions");
      s.index = number(get("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX");
      s.count = number(get("ATTN_TUNE_SHARDS"), "ATTN_TUNE_SHARDS");
    } else {
      throw invalid_input("--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set");
    }
  } else {
    const auto slash = text.find('/');
    if (slash == std::string::npos)
      throw invalid_input(fmt::format("invalid --shard '{}': expected k/n (e.g. 0/4) or auto", text));
    s.index = number(text.substr(0, slash), "k");
    s.count = number(text.substr(slash + 1), "n");
  }
  if (s.index < 0)
    throw invalid_input(fmt::format("invalid --shard '{}': SLURM_ARRAY_TASK_ID {} is below SLURM_ARRAY_TASK_MIN {}",
                                    text, env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_MIN")));
  if (s.count < 1 || s.index >= s.count)
    throw invalid_input(fmt::format("invalid --shard '{}': need 0 <= k < n (got {}/{})", text, s.index, s.count));
  return s;
}

std::vector<sweep_row> with_passes(const std::vector<sweep_row>& rows, std::optional<attention_pass> pass) {
  std::vector<sweep_row> out;
  for (sweep_row row : rows) {
    if (pass) row.problem.pass = *pass;
    if (row.problem.pass != attention_pass::fwdbwd) {
      out.push_back(row);
      continue;
    }
    sweep_row fwd = row, bwd = row;
    fwd.problem.pass = attention_pass::fwd;
    bwd.problem.pass = attention_pass::bwd;
    bwd.name += " bwd";
    out.push_back(fwd);
    out.push_back(bwd);
  }
  return out;
}

std::vector<sweep_row> distinct_shapes(const std::vector<sweep_row>& rows, std::vector<std::string>& repeats) {
  std::vector<sweep_row> out;
  std::map<std::string, size_t> first;  // shape key -> index in out
  for (const auto& r : rows) {
    const auto [it, fresh] = first.emplace(problem_key(r.problem), out.size());
    if (fresh) out.push_back(r);
    else
      repeats.push_back(fmt::format("{} (line {}) is the shape of {} (line {})", r.name, r.line,
                                    out[it->second].name, out[it->second].line));
  }
  return out;
}

std::vector<sweep_row> take_shard(const std::vector<sweep_row>& rows, const shard_spec& shard) {
  std::vector<sweep_row> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (static_cast<int>(i % shard.count) == shard.index) out.push_back(rows[i]);
  return out;
}

}  // namespace attn
