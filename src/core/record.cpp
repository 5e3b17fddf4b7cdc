#include "core/record.hpp"

#include "core/enum_names.hpp"

namespace attn {

namespace {

// One table for both directions, so a new status cannot be printable but unparsable.
constexpr enum_table<status, 6> status_names{{
    {status::ok, "ok"},
    {status::wrong, "wrong"},
    {status::compile_error, "compile_error"},
    {status::pruned, "pruned"},
    {status::launch_error, "launch_error"},
    {status::compiled, "compiled"},
}};

constexpr enum_table<measurement, 3> measurement_names{{
    {measurement::none, ""},
    {measurement::screened, "screened"},
    {measurement::full, "full"},
}};

constexpr enum_table<timing_regime, 2> regime_names{{
    {timing_regime::burst, "burst"},
    {timing_regime::sustained, "sustained"},
}};

}  // namespace

std::string to_string(timing_regime r) { return name_in(regime_names, r, "unknown"); }

timing_regime parse_regime(const std::string& text) {
  if (const auto r = value_in(regime_names, text)) return *r;
  throw invalid_input("invalid --regime '" + text + "': expected burst or sustained");
}

std::string to_string(measurement m) { return name_in(measurement_names, m, ""); }

measurement parse_measurement(const std::string& text) {
  if (const auto m = value_in(measurement_names, text)) return *m;
  throw invalid_input("unknown measurement '" + text + "' (expected screened, full or nothing)");
}

std::string to_string(status s) { return name_in(status_names, s, "unknown"); }

status parse_status(const std::string& text) {
  if (const auto s = value_in(status_names, text)) return *s;
  throw invalid_input("unknown status '" + text +
                      "' (expected ok, wrong, compile_error, pruned, launch_error or compiled)");
}

std::string config_name(const record& r) {
  return r.shape.pass == attention_pass::bwd ? name(r.backward) : name(r.config);
}

void set_backward_config(record& r, const backward_config& c) {
  r.backward = c;
  r.config = dkdv_tile(c);
}

}  // namespace attn
