#include "library/tuned_table.hpp"

#include "codegen/backward.hpp"  // backward_reject

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/tuned_db.hpp"
#include "library/errors.hpp"
#include "library/tuned_db_table.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"

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

template <class F>
auto as_table_error(F&& f) {
  try {
    return f();
  } catch (const invalid_input& e) {
    throw table_error(e.what());
  }
}

// The tuner's per-variant CSV (its end line checked): best_table() finds each shape's choice and
// export_entries() its buckets, exactly as `attn-tune export` would.
std::vector<record> read_results(const std::string& text, const std::string& what, std::vector<std::string>& warnings) {
  return as_table_error([&] {
    return read_csv_file_text(text, what, [&](const std::string& line) { warnings.push_back(line); });
  });
}

template <class D>
bool same_device(const D& entry, const device_desc& d) {
  return entry.device == d.name && entry.cc_major == d.cc_major && entry.cc_minor == d.cc_minor &&
         entry.sm_count == d.sm_count;
}
bool same_device(const device_desc& a, const device_desc& d) {
  return a.name == d.name && a.cc_major == d.cc_major && a.cc_minor == d.cc_minor && a.sm_count == d.sm_count;
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
  if (start == std::string::npos)
    throw table_error(fmt::format("{}: empty, not a table of attn-tune (an export as CSV or JSON, or a results CSV)",
                                  what));
  if (text[start] == '{') {
    t.m_buckets = as_table_error([&] { return read_export_json(text, what); });
  } else if (text.compare(start, 15, "schema_version,") == 0) {
    const auto records = read_results(text, what, t.m_warnings);
    for (const auto& row : best_table(records))
      t.m_exact.push_back(
          {row.best.device, row.best.shape, row.best.family, row.best.config, row.best.median_ms, row.best.backward});
    t.m_buckets = export_entries(best_table(records));
  } else if (text.compare(start, 7, "device,") == 0 || text[start] == '#') {
    t.m_buckets = as_table_error([&] { return read_export_csv(text, what); });
  } else {
    throw table_error(fmt::format("{}: not a table of attn-tune (an export as CSV or JSON, or a results CSV)", what));
  }
  t.check_families();
  return t;
}

void tuned_table::check_families() const {
  auto known = [&](const std::string& family) {
    try {
      find_family(family);
    } catch (const invalid_input& e) {
      throw table_error(fmt::format("{}: {}", m_what, e.what()));
    }
  };
  for (const auto& e : m_exact) known(e.family);
  for (const auto& e : m_buckets) known(e.family);
}

std::string read_file_text(const std::string& path) {
  // A regular file only: a directory or /dev/null would read as an empty table, /dev/zero, a FIFO
  // or /dev/urandom would never end (O_NONBLOCK: opening a FIFO does not wait for a writer).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw table_error(fmt::format("cannot read '{}'", path));
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
  else if (st.st_size > max_table_bytes)
    why = fmt::format("{} bytes, more than the {} a table or bundle may have", st.st_size, max_table_bytes);
  std::string text;
  if (why.empty()) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    for (ssize_t n; got < text.size() && (n = ::read(fd, text.data() + got, text.size() - got)) > 0;)
      got += static_cast<size_t>(n);
    if (got != text.size()) why = "it changed while it was read";
  }
  ::close(fd);
  if (!why.empty()) throw table_error(fmt::format("cannot read '{}': {}", path, why));
  return text;
}

tuned_table tuned_table::load(const std::string& path) {
  if (looks_like_sqlite(path))
    throw table_error(fmt::format("'{}' is a tuned-results database, not a table file: export it first "
                                  "(attn-tune export '{}' --format csv --out table.csv)",
                                  path, path));
  return parse(read_file_text(path), path);
}

tuned_table tuned_table::from_parts(std::string what, std::vector<tuned_shape> exact,
                                    std::vector<export_entry> buckets) {
  tuned_table t;
  t.m_what = std::move(what);
  t.m_exact = std::move(exact);
  t.m_buckets = std::move(buckets);
  t.check_families();
  return t;
}

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

std::vector<tuned_choice> tuned_table::candidates(const device_desc& d, const problem& s) const {
  std::vector<tuned_choice> out;
  // Lengths given with the call ("given") match a shape tuned on lengths of its own: a cache's
  // (kv_lens), a packed batch's (seqlens, with kv_seqlens or without: self-attention's).
  auto same_shape = [&](problem tuned) {
    if (s.kv_lens == "given" && has_kv_lens(tuned)) tuned.kv_lens = s.kv_lens;
    if (s.seqlens == "given" && is_varlen(tuned)) tuned.seqlens = s.seqlens, tuned.kv_seqlens = s.kv_seqlens;
    return tuned == s;
  };
  for (const auto& e : m_exact)
    if (same_device(e.device, d) && same_shape(e.shape)) {
      out.push_back({e.family, e.config, choice_source::tuned, e.backward});
      break;
    }
  if (s.pass == attention_pass::bwd) {  // an export's entry with its backward variant, then the fallbacks
    for (const auto& e : m_buckets)
      if (e.backward && same_device(e, d) && export_key_matches(e, s)) {
        out.push_back({e.family, e.config, choice_source::bucket, *e.backward});
        break;
      }
    for (const backward_config& c : fallback_backwards(std::max(s.head_dim, value_dim(s))))
      out.push_back({"fa2", dkdv_tile(c), choice_source::fallback, c});
    return out;
  }
  for (const auto& e : m_buckets)
    if (same_device(e, d) && export_key_matches(e, s)) {
      out.push_back({e.family, e.config, choice_source::bucket, {}});
      // The bucket's key has no head counts: a packed or split winner of a GQA shape may meet an
      // MHA shape or a packed batch, which refuse those axes; then the same tile without them.
      if (has_decode_axes(e.config))
        out.push_back({e.family, without_decode_axes(e.config), choice_source::bucket, {}});
      break;
    }
  // The export's fallback; where its shared memory does not fit (sm_86, sm_89: 99 KiB), the
  // smallest fa2 tile, which fits every head dim on every sm_80+ device.
  const tile_config fallback = fallback_config(static_cast<int>(s.head_dim)), smallest{64, 64, 4, 1};
  out.push_back({"fa2", fallback, choice_source::fallback, {}});
  if (!(fallback == smallest)) out.push_back({"fa2", smallest, choice_source::fallback, {}});
  return out;
}

std::unique_ptr<tuned_source> open_tuned_source(const std::string& path, const kernel_sources& kernels) {
  if (path.empty()) return std::make_unique<tuned_table>();
  if (looks_like_sqlite(path)) return std::make_unique<tuned_table>(tuned_table_from_db(path, kernels));
  return std::make_unique<tuned_table>(tuned_table::parse(read_file_text(path), path));
}


tuned_choice choose_config(const tuned_source& table, const device_desc& d, const resource_limits& limits,
                           const problem& s) {
  std::vector<std::string> reasons;
  if (s.pass == attention_pass::bwd) {
    for (const tuned_choice& c : table.candidates(d, s)) {
      const std::string label = fmt::format("{} {} {}", to_string(c.source), c.family, name(c.backward));
      if (auto why = backward_reject(c.backward, s, limits)) reasons.push_back(fmt::format("{}: {}", label, *why));
      else return c;
    }
    throw unsupported_problem(fmt::format("no backward kernel can run {} on this device: {}", describe(s),
                                          fmt::join(reasons, "; ")));
  }
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
    if (auto why = missing_axis(*f, c.config)) {
      reasons.push_back(fmt::format("{}: {}", label, *why));
      continue;
    }
    if (auto why = problem_refusal(*f, s)) {
      reasons.push_back(fmt::format("{}: {}", label, *why));
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
