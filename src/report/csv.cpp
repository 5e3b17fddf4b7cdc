#include "report/csv.hpp"

#include <fmt/format.h>
#include <libfccp/csv.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <tuple>

#include "report/atomic_file.hpp"
#include "report/csv_trailer.hpp"
#include "core/problem.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

// The columns: these, the problem's fields of the first schema (core/problem.hpp), then the rest,
// then the fields added since (each file schema adds its columns at the end: the columns of an
// older schema are a prefix of today's).
constexpr std::array leading_columns{"schema_version", "device", "arch", "cc", "sm_count", "cuda_version",
                                     "nvrtc_version", "family"};
// clang-format off
constexpr std::array trailing_columns{
    "config", "block_m", "block_n", "warps", "stages", "status", "message",
    "compile_ms", "cached", "registers", "spill_bytes", "shared_memory_bytes", "reps",
    "median_ms", "iqr_ms", "tflops", "max_error", "allowed_error", "materialized_bytes",
    "fused_extra_bytes", "memory_saving_ratio", "rank", "kernel_hash",
    "noise", "measured", "sm_clock_before_mhz", "sm_clock_after_mhz", "temperature_c", "power_w",
    "throttle", "tied", "inputs", "bound",
    "gbps", "copy_fraction", "copy_gbps", "joules_per_call", "tflops_per_watt",
    "regime", "settle_ms"};
// clang-format on
constexpr size_t column_count = leading_columns.size() + problem_field_count + trailing_columns.size();

// The fields in column order: those of the first schema, then the later ones.
const std::vector<const problem_field*> fields_in_order = [] {
  std::vector<const problem_field*> out;
  for (const auto& f : problem_fields())
    if (in_first_schema(f)) out.push_back(&f);
  for (const auto& f : problem_fields())
    if (!in_first_schema(f)) out.push_back(&f);
  return out;
}();
const size_t first_schema_field_count = [] {
  size_t n = 0;
  for (const auto& f : problem_fields()) n += in_first_schema(f);
  return n;
}();

const std::array<const char*, column_count> column_names = [] {
  std::array<const char*, column_count> names{};
  size_t i = 0;
  for (const char* n : leading_columns) names[i++] = n;
  for (size_t k = 0; k < first_schema_field_count; ++k) names[i++] = fields_in_order[k]->name;
  for (const char* n : trailing_columns) names[i++] = n;
  for (size_t k = first_schema_field_count; k < problem_field_count; ++k) names[i++] = fields_in_order[k]->name;
  return names;
}();

// Schema 3 files end before "noise", schema 4 files before "inputs", schema 5 before "gbps",
// schema 6 before the fields added since; the columns from there on are read when present.
constexpr size_t schema6_added = 7;
const size_t schema3_columns =
    leading_columns.size() + first_schema_field_count + trailing_columns.size() - 10 - schema6_added;
const size_t schema4_columns = schema3_columns + 8;
const size_t schema5_columns = schema4_columns + 2;
const size_t schema6_columns = schema5_columns + schema6_added;

// Reads a field's text into r; a field added after the file's schema takes its default when blank.
void read_field(record& r, const problem_field& f, const std::string& text, int version) {
  if (text.empty() && version < f.since_schema) return;
  try {
    f.set(r.shape, text);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("column '{}': {}", f.name, e.what()));
  }
}

invalid_input read_error(const std::string& path, const std::string& detail) {
  return invalid_input(fmt::format("cannot read results CSV '{}': {}", path, detail));
}

// fccp's own float parser accumulates rounding error, so numbers are taken as text and parsed
// with from_chars, which is exact and round-trips what fmt's shortest form wrote.
template <class T>
T parse_number(std::string_view text, const char* column) {
  T value{};
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec != std::errc() || end != last)
    throw invalid_input(fmt::format("column '{}': bad number '{}'", column, text));
  return value;
}

bool parse_flag(std::string_view text, const char* column) {
  if (text == "0") return false;
  if (text == "1") return true;
  throw invalid_input(fmt::format("column '{}': expected 0 or 1, got '{}'", column, text));
}

// The config column's name against the block_m/block_n/warps/stages columns: a family's own axis
// and the decode axes live in the name only; a backward record's name is the whole variant, the
// columns its dK/dV kernel's tile. The name is redundant with the four numbers; a disagreement
// means the file was edited by hand, and silently preferring one of them would hide that.
record settle_config(record& r, const std::string& config_text) {
  const tile_config columns = r.config;
  if (r.shape.pass == attention_pass::bwd) {
    try {
      set_backward_config(r, parse_backward_config(config_text));
    } catch (const invalid_input& e) {
      throw invalid_input(fmt::format("column 'config' of a pass bwd row: {}", e.what()));
    }
  } else {
    r.config = parse_config_name(config_text);
  }
  const tile_config& named = r.config;
  if (named.block_m != columns.block_m || named.block_n != columns.block_n || named.warps != columns.warps ||
      named.stages != columns.stages)
    throw invalid_input(fmt::format("column 'config': '{}' disagrees with block_m/block_n/warps/stages ({})",
                                    config_text, name(columns)));
  return r;
}

// Fields in csv_columns() order, each already unquoted by fccp.
record parse_record(const std::array<std::string, column_count>& f) {
  size_t i = 0;
  auto next = [&]() -> const std::string& { return f[i++]; };
  auto column = [&]() { return column_names[i - 1]; };
  auto integer = [&]() {
    const auto& t = next();
    return parse_number<int>(t, column());
  };
  auto int64 = [&]() {
    const auto& t = next();
    return parse_number<int64_t>(t, column());
  };
  auto real = [&]() {
    const auto& t = next();
    return parse_number<double>(t, column());
  };
  auto flag = [&]() {
    const auto& t = next();
    return parse_flag(t, column());
  };

  const int version = integer();
  if (version < csv_schema_version_without_end_line || version > csv_schema_version)
    throw invalid_input(fmt::format("unknown schema_version {} (this build reads versions {} to {})", version,
                                    csv_schema_version_without_end_line, csv_schema_version));
  record r;
  r.device.name = next();
  r.device.arch = next();
  {
    const std::string& cc = next();
    const size_t dot = cc.find('.');
    if (dot == std::string::npos)
      throw invalid_input(fmt::format("column 'cc': expected major.minor, got '{}'", cc));
    r.device.cc_major = parse_number<int>(std::string_view(cc).substr(0, dot), "cc");
    r.device.cc_minor = parse_number<int>(std::string_view(cc).substr(dot + 1), "cc");
  }
  r.device.sm_count = integer();
  r.device.cuda_version = next();
  r.device.nvrtc_version = next();
  r.family = next();
  for (size_t k = 0; k < first_schema_field_count; ++k) read_field(r, *fields_in_order[k], next(), version);
  const std::string config_text = next();
  r.config.block_m = integer();
  r.config.block_n = integer();
  r.config.warps = integer();
  r.config.stages = integer();
  r.status = parse_status(next());
  r.message = next();
  r.compile_ms = real();
  r.cached = flag();
  r.registers = integer();
  r.spill_bytes = integer();
  r.shared_memory_bytes = int64();
  r.reps = integer();
  r.median_ms = real();
  r.iqr_ms = real();
  r.tflops = real();
  r.max_error = real();
  r.allowed_error = real();
  r.materialized_bytes = int64();
  r.fused_extra_bytes = int64();
  r.memory_saving_ratio = real();
  r.rank = integer();
  r.kernel_hash = next();
  if (version == 3) return settle_config(r, config_text);
  r.noise = real();
  r.measured = parse_measurement(next());
  r.clocks.sm_clock_before_mhz = integer();
  r.clocks.sm_clock_after_mhz = integer();
  r.clocks.temperature_c = integer();
  r.clocks.power_w = real();
  r.clocks.throttle = parse_number<uint64_t>(next(), column());
  r.tied = flag();
  if (version == 4) return settle_config(r, config_text);
  // A named value: its parser's own message speaks of the option, so the column's is given instead.
  auto named = [&](auto parse, const char* expected) {
    const std::string& text = next();
    try {
      return parse(text);
    } catch (const invalid_input&) {
      throw invalid_input(fmt::format("column '{}': expected {}, got '{}'", column(), expected, text));
    }
  };
  r.inputs = named(parse_input_kind, "normal, wide or sink");
  r.bound = next();
  if (!r.bound.empty() && r.bound != "naive" && r.bound != "rounding")
    throw invalid_input(fmt::format("column 'bound': expected naive, rounding or nothing, got '{}'", r.bound));
  if (version == 5) {
    i += schema6_added;  // not in the file: they read as 0
  } else {
    r.gbps = real();
    r.copy_fraction = real();
    r.copy_gbps = real();
    r.joules_per_call = real();
    r.tflops_per_watt = real();
    r.regime = named(parse_regime, "burst or sustained");
    r.settle_ms = real();
  }
  for (size_t k = first_schema_field_count; k < problem_field_count; ++k)
    read_field(r, *fields_in_order[k], next(), version);
  return settle_config(r, config_text);  // a backward's name is known by the pass, the last column
}

}  // namespace

// fast-cpp-csv-parser splits the input into lines before it looks at quotes, so a quoted
// newline would break the row in two. Line breaks in text are therefore written as spaces:
// read_csv gives back the message with spaces where the newlines were.
std::string csv_field(const std::string& text, bool always_quote) {
  std::string flat = text;
  for (char& c : flat)
    if (c == '\n' || c == '\r') c = ' ';
  // The reader trims unquoted spaces and tabs, so edge whitespace must be quoted to survive.
  const bool edge_space = !flat.empty() && (flat.front() == ' ' || flat.front() == '\t' ||
                                            flat.back() == ' ' || flat.back() == '\t');
  if (!always_quote && !edge_space && flat.find_first_of(",\"") == std::string::npos) return flat;
  std::string quoted = "\"";
  for (char c : flat) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns(column_names.begin(), column_names.end());
  return columns;
}

std::string csv_row(const record& r) {
  const auto& d = r.device;
  // A backward record's columns: its dK/dV kernel's tile (config_name() writes the whole variant).
  const tile_config c = r.shape.pass == attention_pass::bwd ? dkdv_tile(r.backward) : r.config;
  std::string fields, later_fields;
  for (size_t k = 0; k < problem_field_count; ++k)
    (k < first_schema_field_count ? fields : later_fields) += csv_field(fields_in_order[k]->get(r.shape)) + ',';
  return fmt::format(
      "{},{},{},{}.{},{},{},{},{},{}{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}{}",
      csv_schema_version, csv_field(d.name), csv_field(d.arch), d.cc_major, d.cc_minor, d.sm_count,
      csv_field(d.cuda_version), csv_field(d.nvrtc_version), csv_field(r.family), fields,
      config_name(r), c.block_m, c.block_n, c.warps, c.stages, to_string(r.status),
      csv_field(r.message), r.compile_ms, r.cached ? 1 : 0, r.registers, r.spill_bytes,
      r.shared_memory_bytes, r.reps, r.median_ms, r.iqr_ms, r.tflops, r.max_error, r.allowed_error,
      r.materialized_bytes, r.fused_extra_bytes, r.memory_saving_ratio, r.rank, csv_field(r.kernel_hash),
      r.noise, to_string(r.measured), r.clocks.sm_clock_before_mhz, r.clocks.sm_clock_after_mhz,
      r.clocks.temperature_c, r.clocks.power_w, r.clocks.throttle, r.tied ? 1 : 0, to_string(r.inputs), r.bound,
      r.gbps, r.copy_fraction, r.copy_gbps, r.joules_per_call, r.tflops_per_watt, to_string(r.regime), r.settle_ms,
      later_fields.empty() ? "" : "," + later_fields.substr(0, later_fields.size() - 1));
}

void write_csv(const std::string& path, const std::vector<record>& rows) {
  write_file_atomically(path, csv_file_text(rows));
}

namespace {

// The header and rows of `text`; `path` names them in errors. A file's end line (`body`) says how
// many rows it holds, and a file without one cannot be told from one cut short: refused for the
// schema that writes one, read with a warning for the one before it. Text from the database has
// no end line and needs none (it was stored whole, in one transaction): body is null.
std::vector<record> read_records(const std::string& path, std::string_view text, const csv_body* body,
                                 const warning_sink& warn) {
  const size_t last_line = last_line_number(text);
  const bool check_end = body != nullptr, has_end = body && body->rows;
  auto cut_short = [&](const std::string& detail) {
    return read_error(path, fmt::format("line {} is its last and there is no '#end' line: the file is incomplete "
                                        "(cut short while it was written or copied){}",
                                        last_line, detail));
  };
  std::vector<record> rows;
  bool any_current = false;  // a row or the header of a schema that writes an end line (4 on)
  try {
    io::CSVReader<column_count, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>> reader(
        path, text.data(), text.data() + text.size());
    // Columns may come in any order, but every one must be there and none may be extra:
    // a file from another schema should fail here rather than load half-filled records.
    std::apply([&](auto... names) { reader.read_header(io::ignore_missing_column, names...); },
               column_names);
    // A schema 3 file lacks the columns from "noise" on, a schema 4 file those from "inputs" on,
    // a schema 5 file those from "gbps" on; any other missing column is an error.
    // The fields added since schema 6 are never needed: a file without them reads with defaults.
    const size_t needed = reader.has_column(column_names[schema5_columns])   ? schema6_columns
                          : reader.has_column(column_names[schema4_columns]) ? schema5_columns
                          : reader.has_column(column_names[schema3_columns]) ? schema4_columns
                                                                             : schema3_columns;
    for (size_t i = 0; i < needed; ++i)
      if (!reader.has_column(column_names[i]))
        throw read_error(path, fmt::format("the header lacks column '{}'", column_names[i]));
    any_current = needed > schema3_columns;
    std::array<std::string, column_count> fields;
    while (std::apply([&](auto&... f) { return reader.read_row(f...); }, fields)) {
      try {
        rows.push_back(parse_record(fields));
      } catch (const std::exception& e) {
        const std::string where = fmt::format("line {}: {}", reader.get_file_line(), e.what());
        if (check_end && !has_end && reader.get_file_line() == last_line) throw cut_short(fmt::format("; {}", where));
        throw read_error(path, where);
      }
      any_current |= fields[0] != std::to_string(csv_schema_version_without_end_line);  // 4 on: an end line
    }
  } catch (const io::error::base& e) {
    if (check_end && !has_end && !rows.empty()) throw cut_short(fmt::format("; {}", e.what()));
    throw read_error(path, e.what());
  }
  if (!check_end) return rows;
  if (has_end && *body->rows != rows.size())
    throw read_error(path, fmt::format("line {} (its end line) says {} rows, the file has {}", last_line + 1,
                                       *body->rows, rows.size()));
  // A header and no rows nor end line is a file cut right after its first line, whatever its schema.
  if (!has_end && (any_current || rows.empty())) throw cut_short("");
  if (!has_end)
    warn(fmt::format("warning: '{}' has no '#end' line (schema_version {}, from before attn-tune checked its files), "
                     "so a copy cut short cannot be told from the whole; rewrite it (e.g. merge it alone) to add one",
                     path, csv_schema_version_without_end_line));
  return rows;
}

}  // namespace

std::vector<record> read_csv(const std::string& path) {
  std::string file_text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw read_error(path, std::error_code(errno, std::generic_category()).message());
    file_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw read_error(path, "read failed");
  }
  return read_csv_file_text(file_text, path, print_warning);
}

std::vector<record> read_csv_file_text(const std::string& file_text, const std::string& path,
                                       const warning_sink& warn) {
  const csv_body body = split_trailer(path, file_text);
  return read_records(path, body.text, &body, warn);
}

std::vector<record> read_csv_text(const std::string& text, const std::string& origin) {
  return read_records(origin, text, nullptr, print_warning);  // no end line to warn about
}

std::string csv_text(const std::vector<record>& rows) {
  std::string out;
  const auto& columns = csv_columns();
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + columns[i];
  out += '\n';
  for (const record& r : rows) out += csv_row(r) + '\n';
  return out;
}

std::string csv_file_text(const std::vector<record>& rows) {
  std::string text = csv_text(rows);
  text += csv_trailer(text, rows.size());
  return text;
}

}  // namespace attn
