#pragma once
// Command-line options of attn-tune, parsed and validated where they enter.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/terminal.hpp"
#include "codegen/family.hpp"
#include "core/config.hpp"
#include "core/input_kind.hpp"
#include "core/problem.hpp"

namespace attn {

enum class command { tune, sweep, export_table, check, merge, db };

struct options {
  attn::command command = command::tune;
  attn::problem problem;
  /// --pass was given (a sweep then tunes every row in that pass, not the row's own).
  bool pass_given = false;
  /// --family, split at commas (empty: every family of the backend); after parse_options, the
  /// families of the run.
  std::vector<std::string> families;
  bool families_defaulted = false;    ///< no --family: the device's superseding family, if any, alone
  std::string family;                 ///< after parse_options: families joined by ',' (for messages)
  std::vector<search_space> spaces;   ///< after parse_options: each family's space (--space applied)
  std::string backend = "auto";  ///< auto, cuda or hip; after parse_options: cuda or hip
  std::string out;       ///< CSV path; empty = default under results/
  std::string dump_dir;  ///< empty = no dump
  bool compile_only = false;
  std::string arch;  ///< --compile-only target; empty: sm_90a for CUDA, gfx90a for HIP
  std::string cache_dir;        ///< empty after --no-cache
  std::string kernels_dir;      ///< empty = the kernels embedded at build time
  int jobs = 0;
  int device = 0;
  uint64_t seed = 0;
  input_kind inputs = input_kind::normal;  ///< --inputs: what the variants are checked on
  int max_reps = 300;
  int min_reps = 20;
  double min_time_ms = 0;     ///< a floor: repeat at least this long
  double max_time_ms = 250;   ///< the cap: stop after this long, however noisy
  double max_noise = 0.01;    ///< stop once the median's 95% CI half-width is within this fraction
  std::string search = "screen";  ///< screen, exhaustive, halving or random (run/search.hpp)
  std::string objective = "time";  ///< time or energy: what the best is chosen by (run/search.hpp)
  std::string regime = "burst";    ///< burst or sustained: how the full measurements meet the GPU
  double budget_s = 0;            ///< 0 = no budget
  int samples = 32;               ///< --search random
  double kernel_timeout_s = 60;  ///< a variant whose kernels run longer has hung
  int top = 25;
  // sweep
  std::string sweep_file;
  bool resume = false, force = false;
  std::vector<std::string> configs;  ///< --configs: exactly these, instead of the space
  std::string shard;  ///< "k/n", "auto" or empty
  std::vector<int> devices;  ///< GPUs of this host to spread a sweep over; empty = --device
  // the tuned-results database
  std::string db_path;  ///< --db, else ATTN_TUNE_DB, else the default (tuned_db.hpp)
  bool no_db = false;   ///< --no-db: neither read nor write it
  bool retune = false;  ///< measure even when the database has the answer, and replace it
  bool deterministic = false;  ///< --deterministic: each variant's check runs it twice and wants bit-identical outputs
  std::string db_action;             ///< db list|show|forget|path
  std::vector<std::string> db_ids;   ///< db show/forget
  // merge
  std::vector<std::string> merge_inputs;
  // export
  std::string input;  ///< results CSV to export
  std::string device_name;  ///< export/check: the device whose results to read (db/entry_choice.hpp)
  std::string format = "csv";
  // check
  std::string baseline;
  double tolerance = 0.10;
  std::string csv_report, markdown_report;
  attn::verbosity verbosity = verbosity::normal;  ///< -q / -v
  std::string json_out;  ///< --json: FILE or "-"; empty = none
  std::vector<std::string> arguments;  ///< as given, after the program's name (for hints)
};

/// Parses argv. Returns false after printing --help/--version (exit 0). Throws invalid_input
/// naming the bad value, or CLI::ParseError for malformed command lines.
bool parse_options(int argc, char** argv, options& out);

/// The backend a command runs on, from --backend, --family and --arch as given (empty when not
/// given). Throws invalid_input for an unknown backend or family, or a family of another backend.
/// auto: the family's backend; else hip for a gfx --arch, cuda for an sm_ one; else, for a command
/// that runs on a device, hip when `hip_device_present()` (asked only then), else cuda.
backend choose_backend(const std::string& requested, const std::string& family, const std::string& arch,
                       bool runs_on_device, const std::function<bool()>& hip_device_present);

/// "nvidia-h200" from "NVIDIA H200": lower case, runs of other characters as one '-'.
std::string device_slug(const std::string& name);
/// results/<device>-<B>x<H>x<Nq>x<Nkv>x<D>-<dtype>-<layout>[-causal].csv
std::string default_out_path(const std::string& device_name, const problem& s);
/// The file a run without --out writes: `path` if nothing is there, else the first of path-2.csv,
/// path-3.csv, ... that is free, claimed by creating it empty with O_EXCL (and its folders), so a
/// run never refuses to start, never writes over an earlier run's results, and two runs started
/// at once never take one name. Still empty when dropped (the run failed first), it is removed.
class claimed_file {
 public:
  claimed_file() = default;
  explicit claimed_file(const std::string& path);  ///< throws std::runtime_error naming the folder
  ~claimed_file();
  claimed_file(claimed_file&& o) noexcept { *this = std::move(o); }
  claimed_file& operator=(claimed_file&& o) noexcept;
  const std::string& path() const { return m_path; }

 private:
  void release();
  std::string m_path;
  uint64_t m_inode = 0;
};

}  // namespace attn
