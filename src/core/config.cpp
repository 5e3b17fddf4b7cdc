#include "core/config.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "core/problem.hpp"

namespace attn {

namespace {

// Strict: the whole text must be a positive decimal integer that fits in an int.
bool parse_positive(std::string_view text, int& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0;
}

// Consumes "<prefix><positive int>" from the front of text, up to the next '_' or the end.
bool take_field(std::string_view& text, char prefix, int& value) {
  if (text.empty() || text.front() != prefix) return false;
  size_t end = text.find('_');
  if (!parse_positive(text.substr(1, end == std::string_view::npos ? end : end - 1), value)) {
    return false;
  }
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return true;
}

// The four axes as (name, member) pairs, so parsing and error messages share one list.
// `largest` bounds what the resource models multiply (tiles, threads, bytes) well inside int.
struct axis {
  const char* name;
  std::vector<int> search_space::*values;
  int largest;
};
constexpr axis axes[] = {{"block_m", &search_space::block_m, 1024},
                         {"block_n", &search_space::block_n, 1024},
                         {"warps", &search_space::warps, 32},
                         {"stages", &search_space::stages, 16}};
constexpr int largest_knob = 64;

// "" when c is within every axis's bound, else why not (names the value and the bound).
std::string out_of_range(const tile_config& c) {
  const int values[] = {c.block_m, c.block_n, c.warps, c.stages};
  for (size_t i = 0; i < 4; ++i)
    if (values[i] > axes[i].largest)
      return fmt::format("{} {} is over the largest supported, {}", axes[i].name, values[i], axes[i].largest);
  if (c.knob > largest_knob) return fmt::format("knob {} is over the largest supported, {}", c.knob, largest_knob);
  return "";
}

}  // namespace

std::string name(const tile_config& c) {
  const std::string base = fmt::format("m{}_n{}_w{}_s{}", c.block_m, c.block_n, c.warps, c.stages);
  return c.knob == 0 ? base : fmt::format("{}_k{}", base, c.knob);
}

tile_config parse_config_name(const std::string& text) {
  tile_config c;
  std::string_view rest = text;
  bool ok = take_field(rest, 'm', c.block_m) && take_field(rest, 'n', c.block_n) &&
            take_field(rest, 'w', c.warps) && take_field(rest, 's', c.stages) &&
            (rest.empty() || (take_field(rest, 'k', c.knob) && rest.empty()));
  // The round trip guards against spellings like "m064" that parse but would not be the key
  // this config is stored under.
  if (!ok || name(c) != text) {
    throw invalid_input(fmt::format(
        "invalid config name '{}': expected m<block_m>_n<block_n>_w<warps>_s<stages>[_k<knob>]", text));
  }
  if (const std::string why = out_of_range(c); !why.empty())
    throw invalid_input(fmt::format("invalid config name '{}': {}", text, why));
  return c;
}

bool simpler_than(const tile_config& a, const tile_config& b) {
  return std::tie(a.stages, a.warps, a.block_m, a.block_n, a.knob) <
         std::tie(b.stages, b.warps, b.block_m, b.block_n, b.knob);
}

std::vector<tile_config> search_space::enumerate() const {
  std::vector<tile_config> configs;
  configs.reserve(block_m.size() * block_n.size() * warps.size() * stages.size() * knob.size());
  for (int m : block_m) {
    for (int n : block_n) {
      for (int w : warps) {
        for (int s : stages) {
          for (int k : knob) configs.push_back({m, n, w, s, k});
        }
      }
    }
  }
  return configs;
}

// 256-row blocks (two 16-row tiles per warp over 8 warps) won the D=128 prefill shapes on the H200.
std::string space_text(const search_space& s) {
  std::string out = fmt::format("block_m={} block_n={} warps={} stages={}", fmt::join(s.block_m, ","),
                                fmt::join(s.block_n, ","), fmt::join(s.warps, ","), fmt::join(s.stages, ","));
  if (!s.knob_name.empty()) out += fmt::format(" {}={}", s.knob_name, fmt::join(s.knob, ","));
  return out;
}

search_space default_space() { return {{64, 128, 256}, {32, 64, 128}, {4, 8}, {1, 2, 3, 4}}; }

search_space parse_space(const std::vector<std::string>& tokens) { return parse_space(tokens, default_space()); }

search_space parse_space(const std::vector<std::string>& tokens, const search_space& base) {
  search_space space = base;
  std::vector<std::string_view> seen;
  for (const std::string& token : tokens) {
    auto fail = [&](const std::string& why) {
      return invalid_input(fmt::format("invalid --space token '{}': {}", token, why));
    };
    size_t eq = token.find('=');
    if (eq == std::string::npos) throw fail("expected <axis>=<value>[,<value>...]");
    std::string_view axis_name = std::string_view(token).substr(0, eq);
    const axis* found = std::find_if(std::begin(axes), std::end(axes),
                                     [&](const axis& a) { return axis_name == a.name; });
    const bool is_knob = !base.knob_name.empty() && axis_name == base.knob_name;
    if (found == std::end(axes) && !is_knob) {
      throw fail(fmt::format("unknown axis '{}' (expected block_m, block_n, warps{}{} or stages)", axis_name,
                             base.knob_name.empty() ? "" : ", ", base.knob_name));
    }
    if (std::find(seen.begin(), seen.end(), axis_name) != seen.end()) {
      throw fail(fmt::format("axis '{}' given twice", axis_name));
    }
    seen.push_back(axis_name);

    std::string_view list = std::string_view(token).substr(eq + 1);
    if (list.empty()) throw fail(fmt::format("no values for axis '{}'", axis_name));
    std::vector<int> values;
    for (;;) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      int value = 0;
      if (is_knob && item == "0") {
        value = 0;  // the knob's "not set"
      } else if (!parse_positive(item, value)) {
        throw fail(fmt::format("'{}' is not a {} integer", item, is_knob ? "non-negative" : "positive"));
      }
      const int largest = is_knob ? largest_knob : found->largest;
      if (value > largest)
        throw fail(fmt::format("{} {} is over the largest supported, {}", axis_name, value, largest));
      // A repeated value would time the same config twice and skew the ranking's tie-breaks.
      if (std::find(values.begin(), values.end(), value) != values.end()) {
        throw fail(fmt::format("value {} listed twice", value));
      }
      values.push_back(value);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    (is_knob ? space.knob : space.*(found->values)) = std::move(values);
  }
  return space;
}

}  // namespace attn
