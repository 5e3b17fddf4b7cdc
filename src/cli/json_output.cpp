// --json: the run's metadata, and where the JSON goes (command_support.hpp).
#include "cli/command_support.hpp"
#include "report/atomic_file.hpp"

namespace attn {

run_metadata metadata_of(const options& opt, const gpu_info* gpu) {
  run_metadata m;
  m.command = std::string(opt.command == command::sweep ? "sweep" : opt.command == command::check ? "check" : "tune") +
              (opt.compile_only ? " --compile-only" : "");
  m.seed = opt.seed;
  m.inputs = opt.inputs;
  m.arguments = opt.arguments;
  if (gpu) {
    m.device = gpu->desc;
    m.driver_version = gpu->driver_version;
    m.sm_clock_mhz = gpu->clock_mhz;
    m.memory_clock_mhz = gpu->memory_clock_mhz;
  } else {
    m.device.name = "(compile-only)";
    m.device.arch = opt.arch;
  }
  return m;
}

void prepare_json(const options& opt) {
  if (opt.json_out == "-") reserve_stdout_for_data();
  else if (!opt.json_out.empty()) check_writable(opt.json_out);
}

void write_json(const options& opt, const std::string& text) {
  if (!opt.json_out.empty()) write_file_atomically(opt.json_out, text);
}

}  // namespace attn
