// Reading back what export_csv and export_json write: fast-cpp-csv-parser for the CSV (as every
// CSV reader of attn-tune), nlohmann-json for the JSON (as the JSON writers).
#include <array>
#include <cstdint>
#include <charconv>
#include <string_view>
#include <tuple>

#include <fmt/format.h>
#include <libfccp/csv.h>
#include <nlohmann/json.hpp>

#include "report/export.hpp"

namespace attn {

namespace {

// The columns: the device's, the problem's export-key fields (export_key_fields()), then these.
constexpr std::array<const char*, 3> device_columns{"device", "cc", "sm_count"};
constexpr std::array<const char*, 15> entry_columns{"seq_min_exclusive", "seq_max", "kv_min_exclusive", "kv_max",
                                                    "family", "block_m", "block_n", "warps", "stages", "knob",
                                                    "splits", "pack_gqa", "tflops", "tuned_shapes", "variant"};
// The variant's whole name (a backward's): added later too, an older export's entries have none.
constexpr const char* variant_column = "variant";
// Columns added later: an export from before lacks them, and its entries take the default
// (every kv_len; knob 0, splits 1, pack_gqa 0).
constexpr std::array<std::pair<const char*, int64_t>, 5> later_columns{
    {{"kv_min_exclusive", 0}, {"kv_max", INT64_MAX}, {"knob", 0}, {"splits", 1}, {"pack_gqa", 0}}};
bool is_later_column(std::string_view name) {
  if (name == variant_column) return true;
  for (const auto& [n, v] : later_columns)
    if (name == n) return true;
  return false;
}
// A key field added after the first export (a window side, softcap): an older export lacks it.
bool is_later_field(std::string_view name) {
  for (const problem_field* f : export_key_fields())
    if (name == f->name) return !in_first_schema(*f);
  return false;
}
constexpr size_t export_column_count = device_columns.size() + export_key_field_count + entry_columns.size();

const std::array<const char*, export_column_count> export_columns = [] {
  std::array<const char*, export_column_count> names{};
  size_t i = 0;
  for (const char* n : device_columns) names[i++] = n;
  for (const problem_field* f : export_key_fields()) names[i++] = f->name;
  for (const char* n : entry_columns) names[i++] = n;
  return names;
}();

// "9.0" -> (9, 0)
void parse_cc(const std::string& text, int& major, int& minor) {
  const size_t dot = text.find('.');
  auto whole = [](std::string_view t, int& out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size();
  };
  if (dot == std::string::npos || !whole(std::string_view(text).substr(0, dot), major) ||
      !whole(std::string_view(text).substr(dot + 1), minor))
    throw invalid_input(fmt::format("compute capability '{}' is not MAJOR.MINOR", text));
}

template <class T>
T number(const std::string& text, const char* column) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw invalid_input(fmt::format("column '{}': bad number '{}'", column, text));
  return value;
}

// A pass bwd entry's variant name: a backward's, whose dK/dV tile is the entry's block columns.
void set_variant(export_entry& e, const std::string& text) {
  if (text.empty() || e.key.pass != attention_pass::bwd) return;
  const backward_config b = parse_backward_config(text);
  if (!(dkdv_tile(b) == tile_config{e.config.block_m, e.config.block_n, e.config.warps, e.config.stages}))
    throw invalid_input(fmt::format("column 'variant': {} disagrees with block_m/block_n/warps/stages ({})", text,
                                    name(e.config)));
  e.backward = b;
}

export_entry entry_of_fields(const std::array<std::string, export_column_count>& f,
                             const std::array<bool, later_columns.size()>& has) {
  size_t i = 0;
  auto next = [&]() -> const std::string& { return f[i++]; };
  auto integer = [&](const char* column) { return number<int>(next(), column); };
  export_entry e;
  e.device = next();
  parse_cc(next(), e.cc_major, e.cc_minor);
  e.sm_count = integer("sm_count");
  for (const problem_field* f : export_key_fields()) {
    const std::string& text = next();
    if (text.empty() && !in_first_schema(*f)) continue;  // an export from before the field: its default
    try {
      f->set(e.key, text);
    } catch (const invalid_input& why) {
      throw invalid_input(fmt::format("column '{}': {}", f->name, why.what()));
    }
  }
  // A later column's value, or its default when the export lacks it.
  auto later = [&](size_t k) {
    const std::string& text = next();
    return has[k] ? number<int64_t>(text, later_columns[k].first) : later_columns[k].second;
  };
  e.seq_min = number<int64_t>(next(), "seq_min_exclusive");
  e.seq_max = number<int64_t>(next(), "seq_max");
  e.kv_min = later(0);
  e.kv_max = later(1);
  e.family = next();
  e.config.block_m = integer("block_m");
  e.config.block_n = integer("block_n");
  e.config.warps = integer("warps");
  e.config.stages = integer("stages");
  e.config.knob = static_cast<int>(later(2));
  e.config.splits = static_cast<int>(later(3));
  e.config.pack_gqa = static_cast<int>(later(4));
  e.tflops = number<double>(next(), "tflops");
  e.shapes = integer("tuned_shapes");
  set_variant(e, next());  // empty when the export lacks the column
  return e;
}

}  // namespace

std::vector<export_entry> read_export_csv(const std::string& text, const std::string& path) {
  std::vector<export_entry> out;
  try {
    io::CSVReader<export_column_count, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                  io::throw_on_overflow, io::single_and_empty_line_comment<'#'>>
        reader(path, text.data(), text.data() + text.size());
    // Exports from before the later columns lack them; every other one must be there.
    std::apply([&](auto... names) { reader.read_header(io::ignore_missing_column, names...); }, export_columns);
    for (const char* column : export_columns)
      if (!reader.has_column(column) && !is_later_column(column) && !is_later_field(column))
        throw invalid_input(fmt::format("cannot read export '{}': the header lacks column '{}'", path, column));
    std::array<bool, later_columns.size()> has{};
    for (size_t k = 0; k < later_columns.size(); ++k) has[k] = reader.has_column(later_columns[k].first);
    std::array<std::string, export_column_count> fields;
    while (std::apply([&](auto&... f) { return reader.read_row(f...); }, fields)) {
      try {
        out.push_back(entry_of_fields(fields, has));
      } catch (const invalid_input& e) {
        throw invalid_input(fmt::format("cannot read export '{}': line {}: {}", path, reader.get_file_line(), e.what()));
      }
    }
  } catch (const io::error::base& e) {
    throw invalid_input(fmt::format("cannot read export '{}': {}", path, e.what()));
  }
  return out;
}

std::vector<export_entry> read_export_json(const std::string& text, const std::string& path) {
  std::vector<export_entry> out;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const nlohmann::json& j : doc.at("entries")) {
      export_entry e;
      e.device = j.at("device").get<std::string>();
      parse_cc(j.at("cc").get<std::string>(), e.cc_major, e.cc_minor);
      e.sm_count = j.at("sm_count").get<int>();
      for (const problem_field* f : export_key_fields()) {
        // A field added since this export was written takes its default.
        if (!j.contains(f->name) && !in_first_schema(*f)) continue;
        const nlohmann::json& v = j.at(f->name);
        f->set(e.key, f->type == field_type::text   ? v.get<std::string>()
                      : f->type == field_type::flag ? std::string(v.get<bool>() ? "1" : "0")
                      : f->type == field_type::real ? fmt::format("{}", v.get<double>())
                                                    : std::to_string(v.get<int64_t>()));
      }
      e.seq_min = j.at("seq_min_exclusive").get<int64_t>();
      e.seq_max = j.at("seq_max").get<int64_t>();
      e.kv_min = j.value("kv_min_exclusive", int64_t{0});
      e.kv_max = j.value("kv_max", INT64_MAX);
      const nlohmann::json& c = j.at("config");
      e.family = c.at("family").get<std::string>();
      e.config = {c.at("block_m").get<int>(), c.at("block_n").get<int>(), c.at("warps").get<int>(),
                  c.at("stages").get<int>(), c.value("knob", 0),   c.value("splits", 1),
                  c.value("pack_gqa", 0)};
      e.tflops = j.value("tflops", 0.0);
      e.shapes = j.value("tuned_shapes", 0);
      set_variant(e, c.value("variant", std::string()));
      out.push_back(e);
    }
  } catch (const nlohmann::json::exception& e) {
    throw invalid_input(fmt::format("cannot read export '{}': {}", path, e.what()));
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("cannot read export '{}': {}", path, e.what()));
  }
  return out;
}

}  // namespace attn
