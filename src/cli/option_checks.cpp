#include "cli/option_checks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

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
