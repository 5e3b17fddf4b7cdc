// --json: the run's metadata, and where the JSON goes (command_support.hpp).
#include "cli/command_support.hpp"
#include "report/atomic_file.hpp"

#include <fmt/format.h>

namespace attn {

run_metadata metadata_of(const options& opt, const gpu_info* gpu) {
  run_metadata m;
  m.command = std::string(opt.command == command::sweep ? "sweep" : opt.command == command::check ? "check" : "tune") +
              (opt.compile_only ? " --compile-only" : "");
  m.seed = opt.seed;
  m.inputs = opt.inputs;
  m.objective = opt.objective;
  m.regime = opt.regime;
  m.arguments = opt.arguments;
  if (gpu) {
    m.device = gpu->desc;
    m.driver_version = gpu->driver_version;
    m.sm_clock_mhz = gpu->clock_mhz;
    m.memory_clock_mhz = gpu->memory_clock_mhz;
  } else {
    m.device.name = "(compile-only)";
    m.device.arch = opt.arch;
    m.copy.note = "no device: --compile-only";
    m.energy_note = "no device: --compile-only";
  }
  return m;
}

void prepare_json(const options& opt) {
  const std::string& json = opt.json_out;
  if (json == "-") reserve_stdout_for_data();
  if (json.empty() || json == "-") return;
  for (const std::string* input : {&opt.sweep_file, &opt.baseline})
    if (!input->empty() && same_file(json, *input))
      throw invalid_input(fmt::format("--json '{}' is the {} itself: name another file", json,
                                      input == &opt.sweep_file ? "sweep file" : "baseline"));
  // As --out: never over an earlier file without --force (a resumed sweep rewrites its own).
  refuse_overwrite(json, opt.force || (opt.command == command::sweep && opt.resume), "--force overwrites it");
  check_writable(json);
}

void check_json_apart(const options& opt, const std::string& out) {
  if (same_file(opt.json_out, out))
    throw invalid_input(fmt::format("--json and --out both name '{}': the JSON would replace the CSV; name two files",
                                    opt.json_out));
}

void write_json(const options& opt, const std::string& text) {
  if (!opt.json_out.empty()) write_file_atomically(opt.json_out, text);
}

}  // namespace attn
