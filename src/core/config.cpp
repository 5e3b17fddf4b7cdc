#include "core/config.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "common/resources.cuh"  // kernels/common, shared with the device code
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
constexpr int largest_knob = 511;  // each family refuses past its own (hopper: schedule_all)
constexpr int largest_splits = attn_k::MAX_SPLITS;

// "" when c is within every axis's bound, else why not (names the value and the bound).
std::string out_of_range(const tile_config& c) {
  const int values[] = {c.block_m, c.block_n, c.warps, c.stages};
  for (size_t i = 0; i < 4; ++i)
    if (values[i] > axes[i].largest)
      return fmt::format("{} {} is over the largest supported, {}", axes[i].name, values[i], axes[i].largest);
  if (c.knob > largest_knob) return fmt::format("knob {} is over the largest supported, {}", c.knob, largest_knob);
  if (c.splits > largest_splits)
    return fmt::format("splits {} is over the largest supported, {}", c.splits, largest_splits);
  if (c.pack_gqa > 1) return fmt::format("pack_gqa {} is not 0 or 1", c.pack_gqa);
  return "";
}

}  // namespace

std::string name(const tile_config& c) {
  std::string out = fmt::format("m{}_n{}_w{}_s{}", c.block_m, c.block_n, c.warps, c.stages);
  if (c.knob != 0) out += fmt::format("_k{}", c.knob);
  if (c.splits != 1) out += fmt::format("_p{}", c.splits);
  if (c.pack_gqa != 0) out += fmt::format("_g{}", c.pack_gqa);
  return out;
}

tile_config parse_config_name(const std::string& text) {
  tile_config c;
  std::string_view rest = text;
  bool ok = take_field(rest, 'm', c.block_m) && take_field(rest, 'n', c.block_n) &&
            take_field(rest, 'w', c.warps) && take_field(rest, 's', c.stages);
  // The optional parts, each at most once and in this order.
  for (auto [prefix, value] : {std::pair{'k', &c.knob}, {'p', &c.splits}, {'g', &c.pack_gqa}})
    if (ok && !rest.empty() && rest.front() == prefix) ok = take_field(rest, prefix, *value);
  ok = ok && rest.empty();
  // The round trip guards against spellings like "m064" that parse but would not be the key
  // this config is stored under.
  if (!ok || name(c) != text) {
    throw invalid_input(fmt::format(
        "invalid config name '{}': expected m<block_m>_n<block_n>_w<warps>_s<stages>[_k<knob>][_p<splits>][_g1]", text));
  }
  if (const std::string why = out_of_range(c); !why.empty())
    throw invalid_input(fmt::format("invalid config name '{}': {}", text, why));
  return c;
}

bool simpler_than(const tile_config& a, const tile_config& b) {
  return std::tie(a.stages, a.warps, a.block_m, a.block_n, a.knob, a.splits, a.pack_gqa) <
         std::tie(b.stages, b.warps, b.block_m, b.block_n, b.knob, b.splits, b.pack_gqa);
}

std::vector<tile_config> search_space::enumerate() const {
  const std::vector<int> one{1}, none{0};
  const std::vector<int>& split_values = splits.empty() ? one : splits;
  const std::vector<int>& pack_values = pack_gqa.empty() ? none : pack_gqa;
  std::vector<tile_config> configs;
  for (int m : block_m)
    for (int n : block_n)
      for (int w : warps) {
        if (warp_rows != 0 && m != w * warp_rows) continue;
        for (int s : stages)
          for (int k : knob)
            for (int sp : split_values)
              for (int g : pack_values) configs.push_back({m, n, w, s, k, sp, g});
      }
  return configs;
}

// 256-row blocks (two 16-row tiles per warp over 8 warps) won the D=128 prefill shapes on the H200.
std::string space_text(const search_space& s) {
  std::string out = fmt::format("block_m={} block_n={} warps={} stages={}", fmt::join(s.block_m, ","),
                                fmt::join(s.block_n, ","), fmt::join(s.warps, ","), fmt::join(s.stages, ","));
  if (!s.knob_name.empty()) out += fmt::format(" {}={}", s.knob_name, fmt::join(s.knob, ","));
  if (s.decode_axes) {
    auto values = [](const std::vector<int>& v) { return v.empty() ? std::string("auto") : fmt::format("{}", fmt::join(v, ",")); };
    out += fmt::format(" splits={} pack_gqa={}", values(s.splits), values(s.pack_gqa));
  }
  return out;
}

namespace {
/// At most `rows` query rows per K/V head when packed, against at least 4 times as many keys.
bool few_packed_rows(const problem& p, int64_t rows) {
  return decode_rows(p, true) <= rows && p.kv_len >= 4 * p.q_len;
}
}  // namespace

bool decode_sized(const problem& p) { return few_packed_rows(p, 64); }

bool packing_pays(const problem& p) { return p.kv_heads < p.heads && few_packed_rows(p, 256); }

std::vector<int> default_splits(const problem& p, bool pack_gqa, int sm_count) {
  if (sm_count <= 0) sm_count = 132;
  const int64_t blocks = (decode_rows(p, pack_gqa) + 63) / 64 * decode_heads(p, pack_gqa) * p.batch;
  const int64_t most = std::min<int64_t>(largest_splits, p.kv_len / 64);
  const int64_t waves = 4 * int64_t(sm_count);
  if (most < 2 || blocks >= waves) return {1};
  int64_t fill = 1;  // the power of two of splits that gives 4 waves
  while (fill * blocks < waves) fill *= 2;
  std::vector<int> out{1};
  for (int64_t v : {fill / 4, fill / 2, fill})
    if (v >= 2 && v <= most) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<int> short_grid_splits(const problem& p, const std::vector<int>& packings, int sm_count) {
  if (sm_count <= 0) sm_count = 132;
  const int64_t most = std::min<int64_t>(largest_splits, p.kv_len / 128);
  std::vector<int> out{1};
  for (int g : packings) {
    const bool pack = g != 0;
    if (pack && p.kv_heads == p.heads) continue;
    const int64_t blocks = (decode_rows(p, pack) + 127) / 128 * decode_heads(p, pack) * p.batch;
    if (2 * blocks > sm_count) continue;  // over half the SMs: one wave already
    int64_t fill = 1;  // the power of two of splits that gives a block to every SM
    while (fill * blocks < sm_count) fill *= 2;
    for (int64_t v : {fill / 2, fill})
      if (v >= 2 && v <= most && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(static_cast<int>(v));
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// Whether --space named this axis (the family's defaults do not apply to it).
bool names_axis(const search_space& s, const std::string& axis) {
  return std::find(s.named.begin(), s.named.end(), axis) != s.named.end();
}

search_space with_decode_axes(const search_space& s, const problem& p, int sm_count) {
  if (!s.decode_axes) return s;
  search_space out = s;
  if (is_varlen(p)) {  // a packed batch: no split-KV or packed GQA (fa2_reject refuses them)
    if (out.pack_gqa.empty()) out.pack_gqa = {0};
    if (out.splits.empty()) out.splits = {1};
    return out;
  }
  const bool decode = decode_sized(p), packs = packing_pays(p);
  if (out.pack_gqa.empty()) out.pack_gqa = packs ? std::vector<int>{0, 1} : std::vector<int>{0};
  // A family whose prefill searches no splits: speculative decode that packs keeps the prefill
  // tiles, and at small batches their grid leaves most SMs idle (short_grid_splits).
  if (out.splits.empty() && !decode && !s.decode.prefill_splits)
    out.splits = packs ? short_grid_splits(p, out.pack_gqa, sm_count) : std::vector<int>{1};
  if (out.splits.empty()) {  // decode: the counts each packing wants; else the unpacked grid's, as before packing
    std::vector<int> all;
    for (int g : decode ? out.pack_gqa : std::vector<int>{0})
      for (int v : default_splits(p, g != 0, sm_count))
        if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
    std::sort(all.begin(), all.end());
    out.splits = all;
  }
  if (decode) {  // the family's decode tiles, where --space named neither the axis nor its partner
    auto keep = [&](const std::string& axis) { return names_axis(s, axis); };
    const search_space::decode_tiles& d = s.decode;
    if (!keep("block_m") && !keep("warps") && !d.block_m.empty()) {
      out.block_m = d.block_m;
      out.warps = d.warps;
      out.warp_rows = d.warp_rows;
    }
    if (!keep("block_n") && !d.block_n.empty()) out.block_n = d.block_n;
    if (!keep("stages") && !d.stages.empty()) out.stages = d.stages;
    if (!s.knob_name.empty() && !keep(s.knob_name) && !d.knob.empty()) out.knob = d.knob;
  }
  return out;
}
}  // namespace

std::vector<int> knob_extras_for(const search_space& s, const problem& p) {
  std::vector<int> out;
  if (names_axis(s, s.knob_name) || s.knob_name.empty() || (s.decode_axes && decode_sized(p))) return out;
  for (const search_space::knob_extra& e : s.knob_extras)
    if (e.applies && e.applies(p))
      for (int v : e.values)
        if (std::find(s.knob.begin(), s.knob.end(), v) == s.knob.end() && std::find(out.begin(), out.end(), v) == out.end())
          out.push_back(v);
  return out;
}

std::string knob_extras_text(const search_space& s) {
  std::string out;
  for (const search_space::knob_extra& e : s.knob_extras)
    out += fmt::format("{}+{} {}", out.empty() ? fmt::format("; {} ", s.knob_name) : ", ", fmt::join(e.values, ","), e.when);
  return out;
}

search_space for_problem(const search_space& s, const problem& p, int sm_count) {
  search_space out = with_decode_axes(s, p, sm_count);
  for (int v : knob_extras_for(s, p)) out.knob.push_back(v);
  return out;
}

search_space default_space() {
  search_space s;
  s.block_m = {64, 128, 256};
  s.block_n = {32, 64, 128};
  s.warps = {4, 8};
  s.stages = {1, 2, 3, 4};
  return s;
}

search_space only(const tile_config& c) {
  search_space s;
  s.block_m = {c.block_m};
  s.block_n = {c.block_n};
  s.warps = {c.warps};
  s.stages = {c.stages};
  s.knob = {c.knob};
  s.splits = {c.splits};
  s.pack_gqa = {c.pack_gqa};
  s.decode_axes = has_decode_axes(c);
  return s;
}

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
    const bool is_splits = axis_name == "splits", is_pack = axis_name == "pack_gqa";
    // A family without the decode axes takes their one value it has (splits=1, pack_gqa=0), so
    // that one --space serves a run of several families.
    const std::string_view only_value = is_splits ? "1" : "0";
    if ((is_splits || is_pack) && !base.decode_axes && std::string_view(token).substr(eq + 1) != only_value)
      throw fail(fmt::format("the family has no {} axis (the decode axes are fa2's; it takes only {}={})", axis_name,
                             axis_name, only_value));
    if (found == std::end(axes) && !is_knob && !is_splits && !is_pack) {
      throw fail(fmt::format("unknown axis '{}' (expected block_m, block_n, warps{}{}{} or stages)", axis_name,
                             base.knob_name.empty() ? "" : ", ", base.knob_name,
                             base.decode_axes ? ", splits, pack_gqa" : ""));
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
      if ((is_knob || is_pack) && item == "0") {
        value = 0;  // the knob's "not set", no packing
      } else if (!parse_positive(item, value)) {
        throw fail(fmt::format("'{}' is not a {} integer", item, is_knob || is_pack ? "non-negative" : "positive"));
      }
      const int largest = is_knob ? largest_knob : is_splits ? largest_splits : is_pack ? 1 : found->largest;
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
    (is_knob ? space.knob : is_splits ? space.splits : is_pack ? space.pack_gqa : space.*(found->values)) =
        std::move(values);
    space.named.emplace_back(axis_name);
  }
  return space;
}

}  // namespace attn
