#pragma once
// One table of (value, name) pairs per enum serves both directions, so a new value cannot be
// printable but unparsable.
#include <array>
#include <optional>
#include <string>
#include <utility>

namespace attn {

template <class E, size_t N>
using enum_table = std::array<std::pair<E, const char*>, N>;

/// The name of `value`, or `missing` when the table lacks it.
template <class E, size_t N>
std::string name_in(const enum_table<E, N>& table, E value, const char* missing) {
  for (const auto& [v, text] : table)
    if (v == value) return text;
  return missing;
}

/// The value named `text`, or nullopt.
template <class E, size_t N>
std::optional<E> value_in(const enum_table<E, N>& table, const std::string& text) {
  for (const auto& [v, name] : table)
    if (text == name) return v;
  return std::nullopt;
}

}  // namespace attn
