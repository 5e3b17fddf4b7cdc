#include "library/tuned_table.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "library/errors.hpp"
#include "library/json_lite.hpp"
#include "report/best_table.hpp"

namespace attn {

std::string to_string(choice_source s) {
  switch (s) {
    case choice_source::tuned: return "tuned";
    case choice_source::bucket: return "bucket";
    case choice_source::fallback: return "fallback";
  }
  return "?";
}

namespace {

// One CSV line into fields: double-quoted fields may hold commas and doubled quotes.
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
}

struct csv_rows {
  std::map<std::string, size_t> column;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> line_numbers;
};

csv_rows read_csv_text(const std::string& text) {
  csv_rows out;
  std::istringstream in(text);
  std::string line;
  bool header = true;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    auto fields = split_csv_line(line);
    if (header) {
      for (size_t i = 0; i < fields.size(); ++i) out.column[fields[i]] = i;
      header = false;
      continue;
    }
    out.rows.push_back(std::move(fields));
    out.line_numbers.push_back(number);
  }
  return out;
}

// Field access by column name, with the file and line in every message.
struct row_reader {
  const csv_rows& csv;
  size_t index;
  const std::string& what;

  const std::string& text(const std::string& name) const {
    auto it = csv.column.find(name);
    if (it == csv.column.end()) throw table_error(fmt::format("{}: no column '{}'", what, name));
    const auto& row = csv.rows[index];
    if (it->second >= row.size())
      throw table_error(fmt::format("{}:{}: the row has no '{}' field", what, csv.line_numbers[index], name));
    return row[it->second];
  }
  long long integer(const std::string& name) const {
    const std::string& t = text(name);
    try {
      size_t used = 0;
      const long long v = std::stoll(t, &used);
      if (used == t.size()) return v;
    } catch (const std::exception&) {
    }
    throw table_error(fmt::format("{}:{}: {} '{}' is not an integer", what, csv.line_numbers[index], name, t));
  }
  double real(const std::string& name) const {
    const std::string& t = text(name);
    try {
      return t.empty() ? 0.0 : std::stod(t);
    } catch (const std::exception&) {
      throw table_error(fmt::format("{}:{}: {} '{}' is not a number", what, csv.line_numbers[index], name, t));
    }
  }
};

// "9.0" -> (9, 0)
void parse_cc(const std::string& text, int& major, int& minor, const std::string& what) {
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) != 2)
    throw table_error(fmt::format("{}: compute capability '{}' is not MAJOR.MINOR", what, text));
}

template <class F>
auto as_table_error(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const invalid_input& e) {
    throw table_error(fmt::format("{}: {}", what, e.what()));
  }
}

std::vector<export_entry> parse_export_csv(const std::string& text, const std::string& what) {
  const csv_rows csv = read_csv_text(text);
  std::vector<export_entry> out;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const row_reader r{csv, i, what};
    export_entry e;
    e.device = r.text("device");
    parse_cc(r.text("cc"), e.cc_major, e.cc_minor, what);
    e.sm_count = static_cast<int>(r.integer("sm_count"));
    e.type = as_table_error(what, [&] { return parse_dtype(r.text("dtype")); });
    e.head_dim = static_cast<int>(r.integer("head_dim"));
    e.causal = r.integer("causal") != 0;
    e.seq_min = r.integer("seq_min_exclusive");
    e.seq_max = r.integer("seq_max");
    e.family = r.text("family");
    e.config = {static_cast<int>(r.integer("block_m")), static_cast<int>(r.integer("block_n")),
                static_cast<int>(r.integer("warps")), static_cast<int>(r.integer("stages")),
                static_cast<int>(r.integer("knob"))};
    e.tflops = r.real("tflops");
    e.shapes = static_cast<int>(r.integer("tuned_shapes"));
    out.push_back(e);
  }
  return out;
}

std::vector<export_entry> parse_export_json(const std::string& text, const std::string& what) {
  return as_table_error(what, [&] {
    const json_value doc = parse_json(text, what);
    std::vector<export_entry> out;
    for (const json_value& j : doc.at("entries").items) {
      export_entry e;
      e.device = j.at("device").text;
      parse_cc(j.at("cc").text, e.cc_major, e.cc_minor, what);
      e.sm_count = static_cast<int>(j.at("sm_count").number);
      e.type = parse_dtype(j.at("dtype").text);
      e.head_dim = static_cast<int>(j.at("head_dim").number);
      e.causal = j.at("causal").boolean;
      e.seq_min = static_cast<int64_t>(j.at("seq_min_exclusive").number);
      e.seq_max = static_cast<int64_t>(j.at("seq_max").number);
      const json_value& c = j.at("config");
      e.family = c.at("family").text;
      e.config = {static_cast<int>(c.at("block_m").number), static_cast<int>(c.at("block_n").number),
                  static_cast<int>(c.at("warps").number), static_cast<int>(c.at("stages").number),
                  c.has("knob") ? static_cast<int>(c.at("knob").number) : 0};
      e.tflops = j.has("tflops") ? j.at("tflops").number : 0;
      out.push_back(e);
    }
    return out;
  });
}

// The tuner's per-variant CSV: every ok row becomes a record, so best_table() finds each shape's
// choice and export_entries() its buckets, exactly as `attn-tune export` would.
std::vector<record> parse_results_csv(const std::string& text, const std::string& what) {
  const csv_rows csv = read_csv_text(text);
  std::vector<record> out;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const row_reader r{csv, i, what};
    if (r.text("status") != "ok") continue;
    record rec;
    rec.status = status::ok;
    rec.device.name = r.text("device");
    rec.device.arch = r.text("arch");
    parse_cc(r.text("cc"), rec.device.cc_major, rec.device.cc_minor, what);
    rec.device.sm_count = static_cast<int>(r.integer("sm_count"));
    rec.family = r.text("family");
    shape& s = rec.shape;
    s.batch = r.integer("batch");
    s.heads = r.integer("heads");
    s.kv_heads = r.integer("kv_heads");
    s.q_len = r.integer("q_len");
    s.kv_len = r.integer("kv_len");
    s.head_dim = r.integer("head_dim");
    s.causal = r.integer("causal") != 0;
    as_table_error(what, [&] {
      s.dtype = parse_dtype(r.text("dtype"));
      s.layout = parse_layout(r.text("layout"));
      rec.config = parse_config_name(r.text("config"));
      return 0;
    });
    rec.median_ms = r.real("median_ms");
    rec.tflops = r.real("tflops");
    rec.rank = csv.column.count("rank") ? static_cast<int>(r.integer("rank")) : 0;  // schema 1: no ranks
    out.push_back(rec);
  }
  return out;
}

template <class D>
bool same_device(const D& entry, const device_desc& d) {
  return entry.device == d.name && entry.cc_major == d.cc_major && entry.cc_minor == d.cc_minor &&
         entry.sm_count == d.sm_count;
}
bool same_device(const device_desc& a, const device_desc& d) {
  return a.name == d.name && a.cc_major == d.cc_major && a.cc_minor == d.cc_minor && a.sm_count == d.sm_count;
}

bool same_problem(const shape& a, const shape& b) {
  return a.batch == b.batch && a.heads == b.heads && a.kv_heads == b.kv_heads && a.q_len == b.q_len &&
         a.kv_len == b.kv_len && a.head_dim == b.head_dim && a.causal == b.causal && a.dtype == b.dtype &&
         a.layout == b.layout;
}

std::string describe_device(const std::string& name, int major, int minor, int sms) {
  return fmt::format("{} (cc {}.{}, {} SMs)", name, major, minor, sms);
}

}  // namespace

tuned_table tuned_table::parse(const std::string& text, const std::string& what) {
  tuned_table t;
  t.m_what = what;
  t.m_text = text;
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return t;
  if (text[start] == '{') {
    t.m_buckets = parse_export_json(text, what);
  } else if (text.compare(start, 15, "schema_version,") == 0) {
    const auto records = parse_results_csv(text, what);
    for (const auto& row : best_table(records))
      t.m_exact.push_back({row.best.device, row.best.shape, row.best.family, row.best.config, row.best.median_ms});
    t.m_buckets = export_entries(best_table(records));
  } else if (text.compare(start, 7, "device,") == 0 || text[start] == '#') {
    t.m_buckets = parse_export_csv(text, what);
  } else {
    throw table_error(fmt::format("{}: not a table of attn-tune (an export as CSV or JSON, or a results CSV)", what));
  }
  return t;
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw table_error(fmt::format("cannot read '{}'", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

tuned_table tuned_table::load(const std::string& path) { return parse(read_file_text(path), path); }

void tuned_table::check_device(const device_desc& d) const {
  if (empty()) return;
  std::vector<std::string> seen;
  auto note = [&](const std::string& name) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
  };
  for (const auto& e : m_buckets) {
    if (same_device(e, d)) return;
    note(describe_device(e.device, e.cc_major, e.cc_minor, e.sm_count));
  }
  for (const auto& e : m_exact) {
    if (same_device(e.device, d)) return;
    note(describe_device(e.device.name, e.device.cc_major, e.device.cc_minor, e.device.sm_count));
  }
  throw table_error(fmt::format("the table '{}' was not tuned on this device, {}: it holds {}", m_what,
                                describe_device(d.name, d.cc_major, d.cc_minor, d.sm_count),
                                fmt::join(seen, ", ")));
}

std::vector<tuned_choice> tuned_table::candidates(const device_desc& d, const shape& s) const {
  std::vector<tuned_choice> out;
  for (const auto& e : m_exact)
    if (same_device(e.device, d) && same_problem(e.shape, s)) {
      out.push_back({e.family, e.config, choice_source::tuned});
      break;
    }
  for (const auto& e : m_buckets)
    if (same_device(e, d) && e.type == s.dtype && e.head_dim == s.head_dim && e.causal == s.causal &&
        s.q_len > e.seq_min && s.q_len <= e.seq_max) {
      out.push_back({e.family, e.config, choice_source::bucket});
      break;
    }
  // The export's fallback; where its shared memory does not fit (sm_86, sm_89: 99 KiB), the
  // smallest fa2 tile, which fits every head dim on every sm_80+ device.
  const tile_config fallback = fallback_config(static_cast<int>(s.head_dim)), smallest{64, 64, 4, 1};
  out.push_back({"fa2", fallback, choice_source::fallback});
  if (!(fallback == smallest)) out.push_back({"fa2", smallest, choice_source::fallback});
  return out;
}

std::unique_ptr<tuned_source> open_tuned_source(const std::string& path) {
  if (path.empty()) return std::make_unique<tuned_table>();
  const std::string text = read_file_text(path);
  // The tuned-results database of issue 10 (SQLite) plugs in here: a tuned_source over it.
  if (text.rfind("SQLite format 3", 0) == 0)
    throw table_error(fmt::format("'{}' is a tuned-results database, which this build of libattn_tune cannot "
                                  "read yet: export it with `attn-tune export` and pass the CSV or JSON",
                                  path));
  return std::make_unique<tuned_table>(tuned_table::parse(text, path));
}

tuned_choice choose_config(const tuned_source& table, const device_desc& d, const resource_limits& limits,
                           const shape& s) {
  std::vector<std::string> reasons;
  for (const tuned_choice& c : table.candidates(d, s)) {
    const std::string label = fmt::format("{} {} {}", to_string(c.source), c.family, name(c.config));
    const kernel_family* f = nullptr;
    try {
      f = &find_family(c.family);
    } catch (const invalid_input& e) {
      reasons.push_back(fmt::format("{}: {}", label, e.what()));
      continue;
    }
    if (f->backend != backend::cuda || !runs_on(*f, limits.cc_major, limits.cc_minor)) {
      reasons.push_back(fmt::format("{}: {} does not run on cc {}.{}", label, f->name, limits.cc_major,
                                    limits.cc_minor));
      continue;
    }
    if (c.config.knob != 0 && f->default_space.knob_name.empty()) {
      reasons.push_back(fmt::format("{}: the family has no knob axis", label));
      continue;
    }
    if (auto why = f->reject_reason(c.config, s, limits)) {
      reasons.push_back(fmt::format("{}: {}", label, *why));
      continue;
    }
    return c;
  }
  throw unsupported_problem(fmt::format("no kernel can run {} on this device: {}", describe(s),
                                        fmt::join(reasons, "; ")));
}

}  // namespace attn
