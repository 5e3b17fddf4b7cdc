#include "report/record.hpp"

#include <array>
#include <utility>

namespace attn {

namespace {

// One table for both directions, so a new status cannot be printable but unparsable.
constexpr std::array<std::pair<status, const char*>, 6> status_names{{
    {status::ok, "ok"},
    {status::wrong, "wrong"},
    {status::compile_error, "compile_error"},
    {status::pruned, "pruned"},
    {status::launch_error, "launch_error"},
    {status::compiled, "compiled"},
}};

constexpr std::array<std::pair<measurement, const char*>, 3> measurement_names{{
    {measurement::none, ""},
    {measurement::screened, "screened"},
    {measurement::full, "full"},
}};

}  // namespace

std::string to_string(measurement m) {
  for (const auto& [value, text] : measurement_names)
    if (value == m) return text;
  return "";
}

measurement parse_measurement(const std::string& text) {
  for (const auto& [value, name] : measurement_names)
    if (text == name) return value;
  throw invalid_input("unknown measurement '" + text + "' (expected screened, full or nothing)");
}

std::string to_string(status s) {
  for (const auto& [value, text] : status_names)
    if (value == s) return text;
  return "unknown";
}

status parse_status(const std::string& text) {
  for (const auto& [value, name] : status_names)
    if (text == name) return value;
  throw invalid_input("unknown status '" + text +
                      "' (expected ok, wrong, compile_error, pruned, launch_error or compiled)");
}

}  // namespace attn
