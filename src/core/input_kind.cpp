#include "core/input_kind.hpp"

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "core/problem.hpp"

namespace attn {

namespace {

constexpr enum_table<input_kind, 3> input_names{
    {{input_kind::normal, "normal"}, {input_kind::wide, "wide"}, {input_kind::sink, "sink"}}};

}  // namespace

std::string to_string(input_kind k) { return name_in(input_names, k, "unknown"); }

input_kind parse_input_kind(const std::string& text) {
  if (const auto k = value_in(input_names, text)) return *k;
  throw invalid_input(fmt::format("invalid --inputs '{}': expected normal, wide or sink", text));
}

}  // namespace attn
