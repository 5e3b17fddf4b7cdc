#include "core/problem.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn {

namespace {

constexpr int64_t min_head_dim = 32;
constexpr int64_t max_head_dim = 256;

// from_chars rather than stoll: stoll skips whitespace, accepts a '+' and stops silently at
// trailing junk, all of which would let a typo through as a different shape.
bool parse_positive(std::string_view text, int64_t& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  for (;;) {
    size_t at = text.find(separator);
    fields.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return fields;
    text.remove_prefix(at + 1);
  }
}

void require_positive(const char* what, int64_t value) {
  if (value <= 0) throw invalid_input(fmt::format("{} {} is not a positive integer", what, value));
}

// a * b, or false when it does not fit: byte counts are int64 and must never wrap silently.
bool multiply(int64_t a, int64_t b, int64_t& product) {
  return !__builtin_mul_overflow(a, b, &product);
}

int64_t parse_integer_field(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw invalid_input(fmt::format("bad number '{}'", text));
  return value;
}

bool parse_flag_field(std::string_view text) {
  if (text == "0") return false;
  if (text == "1") return true;
  throw invalid_input(fmt::format("expected 0 or 1, got '{}'", text));
}

// Per-sequence lengths' text (kv_lens, seqlens, kv_seqlens) when it has one of their forms ("", "given",
// "uniform:...", lengths joined by '/'); whether the lengths fit the problem is validate()'s.
std::string lengths_text(const char* name, std::string_view t) {
  const bool lengths = !t.empty() && t.find_first_not_of("0123456789/") == std::string_view::npos;
  if (!(t.empty() || t == "given" || t.substr(0, 8) == "uniform:" || lengths))
    throw invalid_input(fmt::format("{} '{}' is not L1/L2/..., uniform:LO:HI or given", name, t));
  return std::string(t);
}

// The fields of problem, each by a member pointer: get, set and tag are built from it.
template <int64_t problem::*member>
std::string integer_text(const problem& p) {
  return std::to_string(p.*member);
}
template <int64_t problem::*member>
void set_integer(problem& p, std::string_view text) {
  p.*member = parse_integer_field(text);
}

constexpr int heads_index = 1, q_len_index = 3;

// The first schema with the decode fields (page_size, kv_lens).
constexpr int decode_fields_schema = 6;

constexpr problem_field decode_field(problem_field f) {
  f.since_schema = decode_fields_schema;
  return f;
}

// The first schema with the variant fields (window_left, window_right, softcap).
constexpr int variant_fields_schema = 7;

constexpr problem_field variant_field(problem_field f) {
  f.since_schema = variant_fields_schema;
  return f;
}

constexpr problem_field value_dim_field(problem_field f) {
  f.since_schema = value_dim_schema;
  return f;
}

constexpr problem_field varlen_field(problem_field f) {
  f.since_schema = varlen_schema;
  return f;
}

constexpr problem_field pass_field(problem_field f) {
  f.since_schema = pass_schema;
  return f;
}

// A real number's text: the shortest that reads back to the same double ("50", "30.5").
std::string real_text(double value) { return fmt::format("{}", value); }

double parse_real_field(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) throw invalid_input(fmt::format("bad number '{}'", text));
  return value;
}

// The window's piece of describe()'s text: "window=1024:0" (the right side of a causal window is 0; no comma
// or parenthesis, which CSV cells and benchmark filters would need escaped).
field_tag window_tag(const problem& p) {
  if (!has_window(p)) return {};
  return field_tag{fmt::format("window={}:{}", p.window_left, p.causal ? 0 : p.window_right)};
}

// clang-format off
constexpr std::array<problem_field, problem_field_count> field_list{{
    {"batch", "B", field_type::integer, 0, false, true, -1,
     integer_text<&problem::batch>, set_integer<&problem::batch>,
     [](const problem& p) { return field_tag{fmt::format("B{}", p.batch)}; }},
    {"heads", "H", field_type::integer, 0, false, true, -1,
     integer_text<&problem::heads>, set_integer<&problem::heads>,
     [](const problem& p) { return field_tag{fmt::format("H{}", p.heads)}; }},
    {"kv_heads", "kv_heads", field_type::integer, 0, false, false, heads_index,
     integer_text<&problem::kv_heads>, set_integer<&problem::kv_heads>,
     [](const problem& p) {
       return p.kv_heads == p.heads ? field_tag{} : field_tag{fmt::format("/{}", p.kv_heads), true};
     }},
    {"q_len", "N", field_type::integer, 0, true, true, -1,
     integer_text<&problem::q_len>, set_integer<&problem::q_len>,
     [](const problem& p) { return field_tag{fmt::format("N{}", p.q_len)}; }},
    {"kv_len", "kv_len", field_type::integer, 0, false, false, q_len_index,
     integer_text<&problem::kv_len>, set_integer<&problem::kv_len>,
     [](const problem& p) {
       return p.kv_len == p.q_len ? field_tag{} : field_tag{fmt::format("x{}", p.kv_len), true};
     }},
    {"head_dim", "D", field_type::integer, 2, false, true, -1,
     integer_text<&problem::head_dim>, set_integer<&problem::head_dim>,
     [](const problem& p) { return field_tag{fmt::format("D{}", p.head_dim)}; }},
    {"dtype", "dtype", field_type::text, 1, false, false, -1,
     [](const problem& p) { return to_string(p.dtype); },
     [](problem& p, std::string_view t) { p.dtype = parse_dtype(std::string(t)); },
     [](const problem& p) { return field_tag{to_string(p.dtype)}; }},
    {"layout", "layout", field_type::text, 0, false, false, -1,
     [](const problem& p) { return to_string(p.layout); },
     [](problem& p, std::string_view t) { p.layout = parse_layout(std::string(t)); },
     [](const problem& p) { return field_tag{to_string(p.layout)}; }},
    {"causal", "causal", field_type::flag, 3, false, false, -1,
     [](const problem& p) { return std::string(p.causal ? "1" : "0"); },
     [](problem& p, std::string_view t) { p.causal = parse_flag_field(t); },
     [](const problem& p) { return p.causal ? field_tag{"causal"} : field_tag{}; }},
    decode_field({"page_size", "page_size", field_type::integer, 0, false, false, -1,
     integer_text<&problem::page_size>, set_integer<&problem::page_size>,
     [](const problem& p) { return p.page_size ? field_tag{fmt::format("paged{}", p.page_size)} : field_tag{}; }}),
    decode_field({"kv_lens", "kv_lens", field_type::text, 0, false, false, -1,
     [](const problem& p) { return p.kv_lens; },
     [](problem& p, std::string_view t) { p.kv_lens = lengths_text("kv_lens", t); },
     [](const problem& p) { return p.kv_lens.empty() ? field_tag{} : field_tag{"lens=" + p.kv_lens}; }}),
    variant_field({"window_left", "window_left", field_type::integer, 4, false, false, -1,
     integer_text<&problem::window_left>, set_integer<&problem::window_left>, window_tag}),
    variant_field({"window_right", "window_right", field_type::integer, 5, false, false, -1,
     integer_text<&problem::window_right>, set_integer<&problem::window_right>,
     [](const problem&) { return field_tag{}; }}),  // window_left's tag shows both sides
    variant_field({"softcap", "softcap", field_type::real, 6, false, false, -1,
     [](const problem& p) { return real_text(p.softcap); },
     [](problem& p, std::string_view t) { p.softcap = parse_real_field(t); },
     [](const problem& p) { return has_softcap(p) ? field_tag{"softcap" + real_text(p.softcap)} : field_tag{}; }}),
    value_dim_field({"head_dim_v", "dv", field_type::integer, 7, false, false, -1,
     integer_text<&problem::head_dim_v>, set_integer<&problem::head_dim_v>,
     [](const problem& p) { return p.head_dim_v ? field_tag{fmt::format("dv{}", p.head_dim_v)} : field_tag{}; }}),
    varlen_field({"seqlens", "seqlens", field_type::text, 0, false, false, -1,
     [](const problem& p) { return p.seqlens; },
     [](problem& p, std::string_view t) { p.seqlens = lengths_text("seqlens", t); },
     [](const problem& p) { return p.seqlens.empty() ? field_tag{} : field_tag{"seqlens=" + p.seqlens}; }}),
    varlen_field({"kv_seqlens", "kv_seqlens", field_type::text, 0, false, false, -1,
     [](const problem& p) { return p.kv_seqlens; },
     [](problem& p, std::string_view t) { p.kv_seqlens = lengths_text("kv_seqlens", t); },
     [](const problem& p) { return p.kv_seqlens.empty() ? field_tag{} : field_tag{"kv_seqlens=" + p.kv_seqlens}; }}),
    // Nothing in describe() for the forward: every name from before the field stays the same.
    pass_field({"pass", "pass", field_type::text, 8, false, false, -1,
     [](const problem& p) { return to_string(p.pass); },
     [](problem& p, std::string_view t) { p.pass = parse_pass(std::string(t)); },
     [](const problem& p) { return has_backward(p) ? field_tag{to_string(p.pass)} : field_tag{}; }}),
}};
// clang-format on

}  // namespace

const std::array<problem_field, problem_field_count>& problem_fields() { return field_list; }

std::string problem_key(const problem& p) {
  std::string key;
  for (const auto& f : problem_fields()) key += fmt::format("{}{}={}", key.empty() ? "" : ",", f.name, f.get(p));
  return key;
}

problem parse_problem_key(std::string_view key) {
  problem p;
  std::vector<bool> seen(problem_field_count, false);
  for (std::string_view item : split(key, ',')) {
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    size_t i = 0;
    while (i < problem_field_count && name != problem_fields()[i].name) ++i;
    if (eq == std::string_view::npos || i == problem_field_count || seen[i])
      throw invalid_input(fmt::format("invalid problem '{}': '{}' is not name=value of a field given once", key, item));
    try {
      problem_fields()[i].set(p, item.substr(eq + 1));
    } catch (const invalid_input& e) {
      throw invalid_input(fmt::format("invalid problem '{}': {}: {}", key, name, e.what()));
    }
    seen[i] = true;
  }
  // A key written before the pass field lacks it (and any field after it): it reads with the default.
  for (size_t i = 0; i < problem_field_count; ++i)
    if (!seen[i] && problem_fields()[i].since_schema < pass_schema)
      throw invalid_input(fmt::format("invalid problem '{}': no {}", key, problem_fields()[i].name));
  try {
    validate(p);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("invalid problem '{}': {}", key, e.what()));
  }
  return p;
}

size_t hash_value(const problem& p) { return std::hash<std::string>()(problem_key(p)); }

int element_size(dtype t) {
  switch (t) {
    case dtype::bf16:
    case dtype::fp16:
      return 2;
  }
  throw std::logic_error("element_size: unknown dtype");
}

std::string to_string(dtype t) {
  switch (t) {
    case dtype::bf16: return "bf16";
    case dtype::fp16: return "fp16";
  }
  throw std::logic_error("to_string: unknown dtype");
}

std::string to_string(layout l) {
  switch (l) {
    case layout::bhsd: return "bhsd";
    case layout::bshd: return "bshd";
  }
  throw std::logic_error("to_string: unknown layout");
}

std::string to_string(attention_pass p) {
  switch (p) {
    case attention_pass::fwd: return "fwd";
    case attention_pass::bwd: return "bwd";
    case attention_pass::fwdbwd: return "fwdbwd";
  }
  throw std::logic_error("to_string: unknown attention pass");
}

dtype parse_dtype(const std::string& text) {
  if (text == "bf16") return dtype::bf16;
  if (text == "fp16") return dtype::fp16;
  throw invalid_input(fmt::format("invalid dtype '{}': expected bf16 or fp16", text));
}

layout parse_layout(const std::string& text) {
  if (text == "bhsd") return layout::bhsd;
  if (text == "bshd") return layout::bshd;
  throw invalid_input(fmt::format("invalid layout '{}': expected bhsd or bshd", text));
}

attention_pass parse_pass(const std::string& text) {
  for (attention_pass p : {attention_pass::fwd, attention_pass::bwd, attention_pass::fwdbwd})
    if (text == to_string(p)) return p;
  throw invalid_input(fmt::format("invalid pass '{}': expected fwd, bwd or fwdbwd", text));
}

problem parse_shape(const std::string& text) {
  std::vector<std::string_view> fields = split(text, ',');
  if (fields.size() != 4) {
    throw invalid_input(fmt::format("invalid --shape '{}': expected B,H,N,D (4 values), got {}",
                                    text, fields.size()));
  }
  int64_t values[4] = {};
  for (size_t i = 0; i < 4; ++i) {
    if (!parse_positive(fields[i], values[i])) {
      throw invalid_input(
          fmt::format("invalid --shape '{}': '{}' is not a positive integer", text, fields[i]));
    }
  }
  problem s;
  s.batch = values[0];
  s.heads = s.kv_heads = values[1];
  s.q_len = s.kv_len = values[2];
  s.head_dim = values[3];
  try {
    validate(s);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("invalid --shape '{}': {}", text, e.what()));
  }
  return s;
}

void validate(const problem& s) {
  require_positive("batch", s.batch);
  require_positive("heads", s.heads);
  require_positive("kv-heads", s.kv_heads);
  require_positive("q-len", s.q_len);
  require_positive("kv-len", s.kv_len);
  require_positive("head dim", s.head_dim);
  // Any head dim in range: fa2 takes every one (loads predicated where rows are not 16-byte
  // aligned), the other families refuse the ones they cannot run (problem_refusal).
  if (s.head_dim < min_head_dim || s.head_dim > max_head_dim)
    throw invalid_input(fmt::format("head dim {} is not in [{}, {}]", s.head_dim, min_head_dim, max_head_dim));
  if (s.head_dim_v != 0 && (s.head_dim_v < min_head_dim || s.head_dim_v > max_head_dim))
    throw invalid_input(fmt::format("value head dim (dv) {} is not 0 (the head dim) or in [{}, {}]", s.head_dim_v,
                                    min_head_dim, max_head_dim));
  if (s.head_dim_v == s.head_dim)
    throw invalid_input(fmt::format("value head dim (dv) {} equals the head dim: give 0 (canonicalize)", s.head_dim_v));
  if (s.heads % s.kv_heads != 0) {
    throw invalid_input(
        fmt::format("heads {} not divisible by kv-heads {}", s.heads, s.kv_heads));
  }
  if (s.page_size != 0 && (s.page_size < 1 || s.page_size > max_page_size || (s.page_size & (s.page_size - 1)) != 0))
    throw invalid_input(fmt::format("page size {} is not 0 (contiguous K/V) or a power of two in [1, {}]",
                                    s.page_size, max_page_size));
  // The largest byte count derived from a shape is the materialized score matrix; if that and
  // the largest tensor fit in int64, every formula in this file does too. A backward's moved bytes
  // sum a dozen tensors (and the LSE and delta): under 32 times the largest one's elements.
  const int64_t max_len = std::max(s.q_len, s.kv_len);
  int64_t scores = 0, tensor = 0;
  bool fits = multiply(s.batch, s.heads, scores) && multiply(scores, s.q_len, scores) &&
              multiply(scores, s.kv_len, scores) && multiply(scores, 8, scores) &&
              multiply(s.batch, s.heads, tensor) && multiply(tensor, max_len, tensor) &&
              multiply(tensor, std::max(s.head_dim, value_dim(s)), tensor) &&
              multiply(tensor, has_backward(s) ? 32 : 8, tensor);
  if (!fits) throw invalid_input(fmt::format("shape {} is too large", describe(s)));
  for (const auto& [side, n] : {std::pair{"left", s.window_left}, std::pair{"right", s.window_right}})
    if (n < -1)
      throw invalid_input(fmt::format("window {} {} is not -1 (no limit) or a count of keys >= 0", side, n));
  if (s.causal && s.window_right >= 0)
    throw invalid_input(fmt::format("window right {} with causal: the causal mask is a window's right side of 0 "
                                    "(give right -1, or 0 on the command line)", s.window_right));
  if (!s.causal && s.window_right == 0)
    throw invalid_input("window right 0 without causal is the causal mask: give causal 1 and right -1");
  if (!(std::isfinite(s.softcap) && s.softcap >= 0))
    throw invalid_input(fmt::format("softcap {} is not 0 (off) or a positive finite cap", s.softcap));
  if (has_kv_lens(s) && s.kv_lens != "given") {
    // One length per sequence is held in memory (and uploaded): bound the batch before drawing them.
    if (s.batch > max_kv_lens_batch)
      throw invalid_input(fmt::format("kv_lens '{}' with a batch of {}: per-sequence lengths take a batch of at most {}",
                                      s.kv_lens, s.batch, max_kv_lens_batch));
    kv_lengths(s);  // throws naming a bad kv_lens
  }
  if (!s.kv_seqlens.empty() && !is_varlen(s))
    throw invalid_input(fmt::format("kv_seqlens '{}' without seqlens: a packed batch gives its queries' lengths "
                                    "(seqlens) and, for cross-attention, its keys' (kv_seqlens)", s.kv_seqlens));
  if (is_varlen(s)) {
    if (has_kv_lens(s) || s.page_size > 0)
      throw invalid_input(fmt::format("seqlens '{}' (a packed batch) with {}: a packed batch's keys are packed too "
                                      "(give their lengths as kv_seqlens)",
                                      s.seqlens, has_kv_lens(s) ? "kv_lens '" + s.kv_lens + "'" : "a paged cache"));
    if (s.kv_seqlens.empty() && s.kv_len != s.q_len)
      throw invalid_input(fmt::format("seqlens '{}' with kv_len {} != q_len {}: cross-attention of a packed batch "
                                      "needs the keys' lengths (kv_seqlens)", s.seqlens, s.kv_len, s.q_len));
    if (s.batch > max_kv_lens_batch)
      throw invalid_input(fmt::format("seqlens '{}' with a batch of {}: per-sequence lengths take a batch of at most {}",
                                      s.seqlens, s.batch, max_kv_lens_batch));
    if (s.seqlens == "given" || s.kv_seqlens == "given") {
      if (s.seqlens != "given" || !(s.kv_seqlens.empty() || s.kv_seqlens == "given"))
        throw invalid_input(fmt::format("seqlens '{}' and kv_seqlens '{}': lengths given at run time are given for both",
                                        s.seqlens, s.kv_seqlens));
    } else {
      q_lengths(s);  // throw naming a bad one
      kv_lengths(s);
      if (q_rows(s) == 0)
        throw invalid_input(fmt::format("seqlens '{}' has no rows: every sequence is empty, nothing to attend", s.seqlens));
      if (kv_rows(s) == 0)
        throw invalid_input(fmt::format("kv_seqlens '{}' has no keys: every sequence's keys are empty", s.kv_seqlens));
    }
  }
}

std::optional<std::string> backward_refusal(const problem& p) {
  if (!has_backward(p)) return std::nullopt;
  std::vector<std::string> what;
  if (has_kv_lens(p)) what.push_back(fmt::format("per-sequence K/V lengths (kv_lens '{}')", p.kv_lens));
  if (p.page_size > 0) what.push_back(fmt::format("a paged K/V cache (page_size {})", p.page_size));
  if (p.head_dim % 8 != 0) what.push_back(fmt::format("head dim {} (not a multiple of 8)", p.head_dim));
  if (value_dim(p) % 8 != 0) what.push_back(fmt::format("dv {} (not a multiple of 8)", value_dim(p)));
  if (what.empty()) return std::nullopt;
  return fmt::format("pass {}: the backward does not take {} yet", to_string(p.pass), fmt::join(what, ", "));
}

std::string describe(const problem& s) {
  std::string text;
  for (const auto& f : problem_fields()) {
    const field_tag t = f.tag(s);
    if (t.text.empty()) continue;
    if (!text.empty() && !t.glued) text += ' ';
    text += t.text;
  }
  return text;
}

namespace {

// "uniform:LO:HI" as its bounds, or false when the text is not of that form.
bool parse_uniform(std::string_view text, int64_t& lo, int64_t& hi) {
  constexpr std::string_view prefix = "uniform:";
  if (text.substr(0, prefix.size()) != prefix) return false;
  const std::vector<std::string_view> parts = split(text.substr(prefix.size()), ':');
  if (parts.size() != 2) return false;
  try {
    lo = parse_integer_field(parts[0]);
    hi = parse_integer_field(parts[1]);
  } catch (const invalid_input&) {
    return false;
  }
  return true;
}

// The same B draws on every machine: splitmix64 of a seed hashed from the text (FNV-1a), not
// std::uniform_int_distribution (whose output the standard leaves to the library).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

namespace {

// `text` (kv_lens' forms) as B lengths, each in [0, bound]; `name` and `bound_name` name them in errors.
std::vector<int64_t> parse_lengths(const std::string& text, int64_t batch, int64_t bound, const char* name,
                                   const char* bound_name) {
  if (text == "given")
    throw invalid_input(fmt::format("{} 'given' means the lengths come with the call (the library's {}): "
                                    "give L1/L2/... or uniform:LO:HI to tune",
                                    name, std::string_view(name) == "kv_lens" ? "cache_seqlens" : "cu_seqlens"));
  std::vector<int64_t> lengths;
  int64_t lo = 0, hi = 0;
  if (parse_uniform(text, lo, hi)) {
    if (lo < 0 || hi < lo || hi > bound)
      throw invalid_input(fmt::format("{} '{}': needs 0 <= LO <= HI <= {} {}", name, text, bound_name, bound));
    uint64_t state = 1469598103934665603ull;
    for (char c : text) state = (state ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    for (int64_t b = 0; b < batch; ++b)
      lengths.push_back(lo + static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(hi - lo + 1)));
    return lengths;
  }
  for (std::string_view item : split(text, '/')) {
    int64_t n = 0;
    try {
      n = parse_integer_field(item);
    } catch (const invalid_input&) {
      throw invalid_input(fmt::format("{} '{}': '{}' is not a length (give L1/L2/... or uniform:LO:HI)", name,
                                      text, item));
    }
    if (n < 0 || n > bound)
      throw invalid_input(fmt::format("{} '{}': length {} is not in [0, {} {}]", name, text, n, bound_name, bound));
    lengths.push_back(n);
  }
  if (static_cast<int64_t>(lengths.size()) != batch)
    throw invalid_input(fmt::format("{} '{}' gives {} lengths for a batch of {}", name, text, lengths.size(), batch));
  return lengths;
}

}  // namespace

std::vector<int64_t> kv_lengths(const problem& p) {
  if (is_varlen(p))
    return p.kv_seqlens.empty() ? parse_lengths(p.seqlens, p.batch, p.kv_len, "seqlens", "kv_len")
                                : parse_lengths(p.kv_seqlens, p.batch, p.kv_len, "kv_seqlens", "kv_len");
  if (p.kv_lens.empty()) return std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(p.batch, 0)), p.kv_len);
  return parse_lengths(p.kv_lens, p.batch, p.kv_len, "kv_lens", "kv_len");
}

std::vector<int64_t> q_lengths(const problem& p) {
  if (!is_varlen(p)) return std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(p.batch, 0)), p.q_len);
  return parse_lengths(p.seqlens, p.batch, p.q_len, "seqlens", "q_len");
}

std::vector<int64_t> cumulative_lengths(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> starts{0};
  for (int64_t n : lengths) starts.push_back(starts.back() + n);
  return starts;
}

int64_t pages_per_sequence(const problem& p) {
  return p.page_size > 0 ? (p.kv_len + p.page_size - 1) / p.page_size : 0;
}

namespace {

// f(q_n, kv_n) summed over the sequences' query and K/V lengths (B * f(q_len, kv_len) without
// per-sequence lengths, or with lengths given only at run time).
template <class T, class F>
T per_sequence_sum(const problem& s, F&& f) {
  const bool given = s.kv_lens == "given" || s.seqlens == "given";
  if ((!has_kv_lens(s) && !is_varlen(s)) || given) return static_cast<T>(s.batch) * f(s.q_len, s.kv_len);
  const std::vector<int64_t> q = q_lengths(s), kv = kv_lengths(s);
  T total = 0;
  for (size_t b = 0; b < q.size(); ++b) total += f(q[b], kv[b]);
  return total;
}

}  // namespace

void canonicalize(problem& p) {
  if (p.head_dim_v == p.head_dim) p.head_dim_v = 0;
  if (p.window_right == 0) p.causal = true;
  if (p.causal && p.window_right == 0) p.window_right = -1;
}

namespace {

// The sum over i in [lo, hi) of max(0, a + slope * i), slope -1, 0 or 1.
double clamped_sum(int64_t lo, int64_t hi, int64_t a, int slope) {
  if (hi <= lo) return 0;
  if (slope == 0) return a > 0 ? double(hi - lo) * double(a) : 0.0;
  // The terms a + slope*i that are positive form one run [from, to): sum it as an arithmetic series.
  int64_t from = lo, to = hi;
  if (slope > 0) from = std::max(lo, -a + 1);
  else to = std::min(hi, a);
  if (to <= from) return 0;
  const double first = double(a + slope * from), last = double(a + slope * (to - 1));
  return (first + last) * double(to - from) / 2;
}

// Query i of a sequence of kv_len keys sees keys [max(0, i + c1), min(kv_len, i + c2)), bottom-right
// aligned (off = kv_len - q_len): c1 = off - left, c2 = off + right + 1, far out on a side with no limit.
struct window_edges {
  int64_t c1, c2;
};
window_edges edges_of(const problem& p, int64_t q_len, int64_t kv_len) {
  const int64_t off = kv_len - q_len;
  const bool left = p.window_left >= 0, right = p.causal || p.window_right >= 0;
  const int64_t right_n = p.causal ? 0 : p.window_right;
  return {left ? off - p.window_left : INT64_MIN / 4, right ? off + right_n + 1 : INT64_MAX / 4};
}

}  // namespace

double visible_pairs(const problem& p, int64_t kv_len) { return visible_pairs(p, p.q_len, kv_len); }

double visible_pairs(const problem& p, int64_t q_len, int64_t kv_len) {
  // Each clamp changes its form once, at i = -c1 and i = kv_len - c2: between those points the
  // count is linear in i, and each piece is summed in closed form.
  const auto [c1, c2] = edges_of(p, q_len, kv_len);
  std::vector<int64_t> cuts = {0, q_len};
  for (int64_t c : {-c1, kv_len - c2})
    if (c > 0 && c < q_len) cuts.push_back(c);
  std::sort(cuts.begin(), cuts.end());
  double total = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const int64_t lo = cuts[k], hi = cuts[k + 1];
    if (hi <= lo) continue;
    // On [lo, hi): begin = 0 or i + c1, end = kv_len or i + c2, whichever holds at lo.
    const bool begin_moves = lo + c1 >= 0, end_moves = lo + c2 < kv_len;
    const int64_t a = (end_moves ? c2 : kv_len) - (begin_moves ? c1 : 0);
    const int slope = (end_moves ? 1 : 0) - (begin_moves ? 1 : 0);
    total += clamped_sum(lo, hi, a, slope);
  }
  return total;
}

int64_t visible_keys(const problem& p, int64_t kv_len) { return visible_keys(p, p.q_len, kv_len); }

int64_t visible_keys(const problem& p, int64_t q_len, int64_t kv_len) {
  if (!has_window(p)) return kv_len;
  // Both edges rise by one a query and the window is at least one key wide, so the union is one
  // run of keys, from the first query that sees a key to the last one that does.
  const auto [c1, c2] = edges_of(p, q_len, kv_len);
  const int64_t first = std::max<int64_t>(0, 1 - c2), last = std::min<int64_t>(q_len - 1, kv_len - 1 - c1);
  if (first > last) return 0;
  return std::min(kv_len, last + c2) - std::max<int64_t>(0, first + c1);
}

namespace {

// The forward's count (attention_flops' rules); the backward's is a multiple of it.
double forward_flops(const problem& s) {
  // In double from the start: the integer product overflows int64 for long sequences. Per (query,
  // key) pair: 2 D for Q K^T and 2 dv for P V (4 D when dv = d).
  const double per_pair = 2.0 * static_cast<double>(s.head_dim + value_dim(s));
  const double heads = static_cast<double>(s.heads);
  if (has_window(s)) {
    // The visible pairs exactly: a window's TFLOPS compares with the dense kernel's.
    const double pairs = per_sequence_sum<double>(s, [&](int64_t q, int64_t n) { return visible_pairs(s, q, n); });
    return per_pair * pairs * heads;
  }
  const double flops =
      per_pair * heads * per_sequence_sum<double>(s, [](int64_t q, int64_t n) { return double(q) * double(n); });
  return s.causal ? flops / 2 : flops;
}

}  // namespace

double attention_flops(const problem& s) {
  // FlashAttention's convention (its benchmarks' flops(..., mode="bwd")): the backward's five
  // matrix products (S = Q K^T recomputed, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q) are
  // counted as 2.5 times the forward's two.
  switch (s.pass) {
    case attention_pass::fwd: return forward_flops(s);
    case attention_pass::bwd: return 2.5 * forward_flops(s);
    case attention_pass::fwdbwd: return 3.5 * forward_flops(s);
  }
  throw std::logic_error("attention_flops: unknown attention pass");
}

double tflops(const problem& s, double milliseconds) {
  // A zero or negative time is a measurement bug; an infinite rate in a table would hide it.
  if (!(milliseconds > 0)) {
    throw std::invalid_argument(fmt::format("tflops: time {} ms is not positive", milliseconds));
  }
  return attention_flops(s) / (milliseconds * 1e9);
}

int64_t q_rows(const problem& s) {
  if (!is_varlen(s)) return s.batch * s.q_len;
  return per_sequence_sum<int64_t>(s, [](int64_t q, int64_t) { return q; });
}

int64_t kv_rows(const problem& s) {
  if (!is_varlen(s)) return s.batch * s.kv_len;  // as allocated: a cache's capacity with kv_lens
  return per_sequence_sum<int64_t>(s, [](int64_t, int64_t n) { return n; });
}

int64_t q_bytes(const problem& s) { return q_rows(s) * s.heads * s.head_dim * element_size(s.dtype); }

int64_t o_bytes(const problem& s) { return q_rows(s) * s.heads * value_dim(s) * element_size(s.dtype); }

int64_t kv_bytes(const problem& s) { return kv_rows(s) * s.kv_heads * s.head_dim * element_size(s.dtype); }

int64_t v_bytes(const problem& s) { return kv_rows(s) * s.kv_heads * value_dim(s) * element_size(s.dtype); }

namespace {

// The rows of K (or V) that some query's window reaches (every key without a window), summed over
// the sequences.
int64_t read_kv_rows(const problem& s) {
  return per_sequence_sum<int64_t>(s, [&](int64_t q, int64_t n) { return visible_keys(s, q, n); });
}

}  // namespace

int64_t kv_read_bytes(const problem& s) { return read_kv_rows(s) * s.kv_heads * s.head_dim * element_size(s.dtype); }

int64_t v_read_bytes(const problem& s) { return read_kv_rows(s) * s.kv_heads * value_dim(s) * element_size(s.dtype); }

int64_t materialized_extra_bytes(const problem& s) {
  if (!is_varlen(s)) return s.batch * s.heads * s.q_len * s.kv_len * (4 + element_size(s.dtype));
  return s.heads * per_sequence_sum<int64_t>(s, [](int64_t q, int64_t n) { return q * n; }) * (4 + element_size(s.dtype));
}

int64_t lse_bytes(const problem& s) { return q_rows(s) * s.heads * 4; }

namespace {

// Q, K and V read; O and its LSE written.
int64_t forward_bytes(const problem& s) {
  return q_bytes(s) + o_bytes(s) + kv_read_bytes(s) + v_read_bytes(s) + lse_bytes(s);
}

// Read: Q, K and V (the keys some query sees), O and dO (for delta = rowsum(dO * O)), the forward's
// LSE. Written: dQ, and dK and dV whole (as allocated: a key no query sees gets a zero gradient,
// which is written too). delta, 4 bytes a query row and head like the LSE, is written by the
// preprocessing and read again by the gradients' kernel.
int64_t backward_bytes(const problem& s) {
  const int64_t read = q_bytes(s) + kv_read_bytes(s) + v_read_bytes(s) + 2 * o_bytes(s) + lse_bytes(s);
  const int64_t written = q_bytes(s) + kv_bytes(s) + v_bytes(s);
  const int64_t delta = 2 * lse_bytes(s);
  return read + written + delta;
}

}  // namespace

int64_t moved_bytes(const problem& s) {
  switch (s.pass) {
    case attention_pass::fwd: return forward_bytes(s);
    case attention_pass::bwd: return backward_bytes(s);
    case attention_pass::fwdbwd: return forward_bytes(s) + backward_bytes(s);
  }
  throw std::logic_error("moved_bytes: unknown attention pass");
}

int64_t element_offset(layout l, int64_t h_count, int64_t n, int64_t d, int64_t b, int64_t h,
                       int64_t i) {
  switch (l) {
    case layout::bhsd: return ((b * h_count + h) * n + i) * d;
    case layout::bshd: return ((b * n + i) * h_count + h) * d;
  }
  throw std::logic_error("element_offset: unknown layout");
}

int64_t row_offset(const problem& p, bool keys, int64_t d, int64_t b, int64_t h, int64_t i,
                   const std::vector<int64_t>& starts) {
  const int64_t heads = keys ? p.kv_heads : p.heads;
  if (is_varlen(p)) return element_offset(p.layout, heads, starts.back(), d, 0, h, starts[static_cast<size_t>(b)] + i);
  return element_offset(p.layout, heads, keys ? p.kv_len : p.q_len, d, b, h, i);
}

}  // namespace attn
