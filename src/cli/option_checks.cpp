#include "cli/option_checks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "core/backward_config.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

namespace attn {

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

uint64_t parse_seed(const std::string& text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!all_digits(text) || ec != std::errc() || end != text.data() + text.size())
    throw invalid_input(fmt::format("invalid --seed '{}': expected an integer from 0 to 18446744073709551615", text));
  return value;
}

int64_t parse_positive_count(const std::string& text, const std::string& option) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    throw invalid_input(fmt::format("invalid {} {}: too large (at most 9223372036854775807)", option, text));
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0)
    throw invalid_input(fmt::format("invalid {} {}: must be a positive integer", option, text));
  return value;
}

std::string kv_lens_from_option(const std::string& text, const std::string& option) {
  const bool uniform = text.rfind("uniform:", 0) == 0;
  const bool list = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || c == ','; });
  if (!uniform && !list)
    throw invalid_input(fmt::format("invalid {} '{}': expected lengths L1,L2,... or uniform:LO:HI", option, text));
  std::string out = text;
  if (list) std::replace(out.begin(), out.end(), ',', '/');
  return out;
}

int64_t longest_kv_len(const std::string& kv_lens, const std::string& option_text, const std::string& option) {
  int64_t longest = 0;
  if (kv_lens.rfind("uniform:", 0) == 0) {
    const auto colon = kv_lens.rfind(':');
    longest = parse_positive_count(kv_lens.substr(colon + 1), option + " HI");
  } else {
    size_t at = 0;
    while (at <= kv_lens.size()) {
      const size_t next = std::min(kv_lens.find('/', at), kv_lens.size());
      const std::string item = kv_lens.substr(at, next - at);
      int64_t n = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
      if (ec != std::errc() || end != item.data() + item.size() || item.empty())
        throw invalid_input(fmt::format("invalid {} '{}': '{}' is not a length", option, option_text, item));
      longest = std::max(longest, n);
      at = next + 1;
    }
  }
  return std::max<int64_t>(longest, 1);
}

std::pair<int64_t, int64_t> parse_window(const std::string& text) {
  const size_t comma = text.find(',');
  auto side = [&](const std::string& item, const char* which) {
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || n < -1)
      throw invalid_input(fmt::format("invalid --window '{}': {} '{}' is not -1 (no limit) or a count of keys >= 0",
                                      text, which, item));
    return n;
  };
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
    throw invalid_input(fmt::format("invalid --window '{}': expected LEFT,RIGHT (e.g. 4096,0; -1 = no limit)", text));
  return {side(text.substr(0, comma), "LEFT"), side(text.substr(comma + 1), "RIGHT")};
}

double parse_softcap(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0)
    throw invalid_input(fmt::format("invalid --softcap '{}': expected 0 (off) or a positive number such as 50", text));
  return value;
}

int64_t parse_value_dim(const std::string& text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 32 || value > 256)
    throw invalid_input(fmt::format("invalid --dv '{}': expected V's head dim, an integer in [32, 256] (as the head "
                                    "dim's; default: the head dim)",
                                    text));
  return value;
}

void check_config_names(const std::vector<std::string>& configs, attention_pass pass) {
  for (const auto& c : configs) {
    const bool backward = is_backward_config_name(c);
    if (backward && pass == attention_pass::fwd)
      throw invalid_input(fmt::format("invalid --configs: {} is a backward variant, but the run tunes pass fwd (give "
                                      "--pass bwd, or a forward config such as m128_n64_w4_s2)",
                                      c));
    if (!backward && pass == attention_pass::bwd) {
      parse_config_name(c);  // a bad name is named as such first
      throw invalid_input(fmt::format("invalid --configs: {} is a forward config, but pass bwd runs backward variants "
                                      "such as kv_m32_n64_w4_s2-q_m64_n64_w4_s2",
                                      c));
    }
    if (!backward) parse_config_name(c);  // throws naming a bad one
  }
}

void check_distinct(const std::vector<std::string>& configs) {
  for (size_t i = 0; i < configs.size(); ++i)
    if (std::find(configs.begin(), configs.begin() + static_cast<std::ptrdiff_t>(i), configs[i]) !=
        configs.begin() + static_cast<std::ptrdiff_t>(i))
      throw invalid_input(fmt::format("invalid --configs: {} is named twice", configs[i]));
}

std::string shell_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_=,./:+@%").find(c) != std::string_view::npos;
    });
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace attn
