#pragma once
// What the commands share: progress on the terminal, the cache and tuning options from the
// command line, the device check and opening (the run over families is run/orchestrator.hpp).
#include <string>

#include "backend/runtime.hpp"
#include "cli/options.hpp"
#include "codegen/cache.hpp"
#include "report/json_report.hpp"
#include "run/orchestrator.hpp"
#include "run/tuner.hpp"

namespace attn {

// Progress on stderr: rewritten in place on a terminal, one line per step otherwise.
class progress_line {
 public:
  /// quiet: says nothing; verbose: every line kept; on a terminal a line is cut to its width.
  explicit progress_line(verbosity v = verbosity::normal);
  void operator()(const std::string& text);
  /// Verbose only: a variant's news (report/variant_line.hpp), a line of its own, flushed.
  void variant(variant_event event, const record& r, const std::string& log);
  void done();  ///< clears an open line before other output

 private:
  bool m_tty = false, m_open = false;
  verbosity m_verbosity = verbosity::normal;
};

std::string human_bytes(double bytes);
compile_cache make_cache(const options& opt);
/// Options of the run's first family (tune_families/compile_families set each family's own).
tune_options make_tune_options(const options& opt, progress_line& progress);
/// The runtime of opt.backend (resolved by parse_options to cuda or hip); nullptr for hip in a
/// build without HIP.
const device_runtime* runtime_of(const options& opt);
/// False (after saying why on stderr) when the backend has no device (or, for HIP, this build
/// has no HIP): the command then exits with code 4.
bool have_device(const options& opt);
/// Opens device `ordinal` of the backend (have_device first). Throws device_error.
gpu_info open_device(const options& opt, int ordinal);
/// The run's metadata for --json (gpu: nullptr for --compile-only, whose copy bandwidth says why it
/// was not measured; with a device the caller sets what it measured).
run_metadata metadata_of(const options& opt, const gpu_info* gpu);
/// Writes --json's text when --json was given (checked writable first by prepare_json).
void write_json(const options& opt, const std::string& text);
/// Before the run: --json - reserves standard output; a --json file must be writable, and is
/// neither an input (the sweep file, the baseline) nor an existing file without --force.
void prepare_json(const options& opt);
/// Refuses a --json that names `out`, the run's results CSV.
void check_json_apart(const options& opt, const std::string& out);
/// read_csv(path), refusing (invalid_input naming the file) a row of a family this build lacks.
std::vector<record> read_csv_of_known_families(const std::string& path);
/// "x.best.csv" beside "x.csv" (from the file's name alone: "d.csv/out" gives "d.csv/out.best.csv");
/// "" when `out` is not a regular file ("-", a FIFO, /dev/...): no best table is written then.
std::string best_path_for(const std::string& out);
/// The line on stderr after a variant hung: which one, `kept` (where what was measured went), and
/// how to go on.
std::string hang_report(const record& hung, const std::string& kept);

/// What the run's JSON says of energy (run.energy): energy_note when there is one, else "" (measured)
/// under --objective energy and "not measured: ..." under time, which measures none.
std::string energy_run_note(const options& opt, const std::string& energy_note);
/// Why the run records no energy on this GPU (NVML absent, no energy counter, not an NVIDIA GPU),
/// or "" when it does.
std::string energy_note_of(const gpu_info& gpu, const class nvml_monitor& nvml);
/// --objective energy with no energy to rank by (energy_note_of says why): invalid_input, before
/// anything is measured.
void require_energy(const options& opt, const std::string& energy_note);

/// The run's families, spaces, cache and kernels, for run/orchestrator.hpp.
family_run family_run_of(const options& opt);

}  // namespace attn
