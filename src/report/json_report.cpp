#include "report/json_report.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "report/best_table.hpp"

namespace attn {

namespace {

using nlohmann::ordered_json;

// JSON has no NaN or infinity: such a number (an error that is NaN) is null.
ordered_json number(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }

ordered_json device_json(const device_desc& d) {
  return {{"name", d.name},         {"arch", d.arch},
          {"cc", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"sm_count", d.sm_count}, {"cuda_version", d.cuda_version},
          {"nvrtc_version", d.nvrtc_version}};
}

ordered_json shape_json(const problem& s) {
  ordered_json out = ordered_json::object();
  for (const auto& f : problem_fields()) {
    const std::string text = f.get(s);
    switch (f.type) {
      case field_type::integer: out[f.name] = std::stoll(text); break;
      case field_type::flag: out[f.name] = text == "1"; break;
      case field_type::text: out[f.name] = text; break;
      case field_type::real: out[f.name] = std::stod(text); break;
    }
  }
  return out;
}

ordered_json record_json(const record& r) {
  return {{"family", r.family},
          {"shape", shape_json(r.shape)},
          {"config", config_name(r)},
          {"block_m", r.config.block_m},
          {"block_n", r.config.block_n},
          {"warps", r.config.warps},
          {"stages", r.config.stages},
          {"knob", r.config.knob},
          {"splits", r.config.splits},
          {"pack_gqa", r.config.pack_gqa},
          {"status", to_string(r.status)},
          {"message", r.message},
          {"compile_ms", number(r.compile_ms)},
          {"cached", r.cached},
          {"registers", r.registers},
          {"spill_bytes", r.spill_bytes},
          {"shared_memory_bytes", r.shared_memory_bytes},
          {"reps", r.reps},
          {"median_ms", number(r.median_ms)},
          {"iqr_ms", number(r.iqr_ms)},
          {"tflops", number(r.tflops)},
          {"max_error", number(r.max_error)},
          {"allowed_error", number(r.allowed_error)},
          {"materialized_bytes", r.materialized_bytes},
          {"fused_extra_bytes", r.fused_extra_bytes},
          {"memory_saving_ratio", number(r.memory_saving_ratio)},
          {"rank", r.rank},
          {"kernel_hash", r.kernel_hash},
          {"noise", number(r.noise)},
          {"measured", to_string(r.measured)},
          {"sm_clock_before_mhz", r.clocks.sm_clock_before_mhz},
          {"sm_clock_after_mhz", r.clocks.sm_clock_after_mhz},
          {"temperature_c", r.clocks.temperature_c},
          {"power_w", number(r.clocks.power_w)},
          {"throttle", r.clocks.throttle},
          {"tied", r.tied},
          {"inputs", to_string(r.inputs)},
          {"bound", r.bound},
          {"gbps", number(r.gbps)},
          {"copy_fraction", number(r.copy_fraction)},
          {"copy_gbps", number(r.copy_gbps)},
          {"joules_per_call", number(r.joules_per_call)},
          {"tflops_per_watt", number(r.tflops_per_watt)},
          {"regime", to_string(r.regime)},
          {"settle_ms", number(r.settle_ms)}};
}

// The measured copy bandwidth, or null and why not.
ordered_json copy_json(const copy_bandwidth& c) {
  const bool measured = c.gbps > 0;
  return {{"gbps", measured ? number(c.gbps) : ordered_json(nullptr)},
          {"bytes", c.bytes},
          {"reps", c.reps},
          {"convention", "a device-to-device copy of `bytes`: read + written bytes (2 x bytes) over its median time"},
          {"note", measured ? std::string() : c.note.empty() ? std::string("not measured") : c.note}};
}

ordered_json meta_json(const run_metadata& m) {
  return {{"command", m.command},
          {"arguments", m.arguments},
          {"seed", m.seed},
          {"inputs", to_string(m.inputs)},
          {"device", device_json(m.device)},
          {"driver_version", m.driver_version},
          {"sm_clock_mhz", m.sm_clock_mhz},
          {"memory_clock_mhz", m.memory_clock_mhz},
          {"copy_bandwidth", copy_json(m.copy)},
          {"objective", m.objective},
          {"regime", m.regime},
          {"energy", m.energy_note.empty() ? ordered_json("measured") : ordered_json(m.energy_note)}};
}

ordered_json tool_json() { return {{"version", ATTN_TUNE_VERSION}, {"csv_schema_version", csv_schema_version}}; }

}  // namespace

std::string json_text(const nlohmann::ordered_json& doc) {
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string results_json(const run_metadata& meta, const std::vector<record>& rows) {
  ordered_json variants = ordered_json::array(), best = ordered_json::array();
  for (const auto& r : rows) variants.push_back(record_json(r));
  for (const auto& b : best_table(rows)) {
    ordered_json row = record_json(b.best);
    row["runner_up"] = b.runner_up ? ordered_json(b.runner_up->family + " " + config_name(*b.runner_up))
                                   : ordered_json(nullptr);
    row["runner_up_gap"] = b.runner_up ? number(b.runner_up_gap) : ordered_json(nullptr);
    best.push_back(std::move(row));
  }
  const ordered_json doc = {
      {"attn_tune", tool_json()}, {"run", meta_json(meta)}, {"variants", variants}, {"best", best}};
  return json_text(doc);
}

std::string check_json(const run_metadata& meta, const std::string& baseline, const std::vector<check_line>& lines,
                       const std::optional<std::string>& kernel_change) {
  ordered_json rows = ordered_json::array();
  for (const auto& l : lines)
    rows.push_back({{"shape", l.shape},
                    {"family", l.family},
                    {"config", l.config},
                    {"baseline_ms", number(l.baseline_ms)},
                    {"now_ms", l.now_ms ? number(*l.now_ms) : ordered_json(nullptr)},
                    {"ratio", l.ratio ? number(*l.ratio) : ordered_json(nullptr)},
                    {"verdict", l.verdict},
                    {"why", l.why}});
  const ordered_json doc = {{"attn_tune", tool_json()},
                            {"run", meta_json(meta)},
                            {"baseline", baseline},
                            {"kernel_change", kernel_change ? ordered_json(*kernel_change) : ordered_json(nullptr)},
                            {"shapes", rows}};
  return json_text(doc);
}

}  // namespace attn
