#pragma once
// The candidate loop for one shape: build the variants, verify each against the reference on
// fresh random inputs, time the ones that pass, choose the best.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/runtime.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"
#include "report/variant_line.hpp"
#include "run/search.hpp"
#include "run/timer.hpp"

namespace attn {

/// --objective energy: after each full measurement the kernel runs back to back for at least this
/// long between two steps of NVML's energy counter (measure_power, run/sustain.hpp).
constexpr double energy_window_ms = 500;

struct tune_options {
  std::string family = "fa2";  ///< must run on the device's backend (mfma on HIP)
  search_space space = default_space();
  std::vector<tile_config> configs;  ///< when not empty: exactly these, instead of `space`
  /// Pass bwd: when not empty, exactly these backward variants instead of the family's defaults.
  std::vector<backward_config> backward_configs;
  int jobs = 0;  ///< compile threads; 0 = all cores
  timing_options timing;  ///< the full-precision measurement
  search_kind search = search_kind::screen;
  attn::objective objective = objective::time;  ///< what choose_best ranks by (--objective)
  int keep_top = 3;  ///< the screening refines at least this many
  int samples = 32;  ///< --search random: configs drawn from the space
  /// --budget-s: nothing more is verified or timed after this (the best so far stands).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Reads the GPU's clocks before and after each timing (record::clocks); nullptr or unavailable:
  /// not recorded.
  const class nvml_monitor* clocks = nullptr;
  /// The run's copy bandwidth (run/copy_bandwidth.hpp), for each timed record's copy_fraction;
  /// 0 = not measured.
  double copy_gbps = 0;
  uint64_t seed = 0;
  input_kind inputs = input_kind::normal;  ///< what the variants are checked on
  /// --deterministic: a variant passes only when a rerun on the same inputs gives bit-identical outputs.
  bool deterministic = false;
  int64_t reference_chunk_bytes = int64_t(1) << 30;
  int cpu_check_rows = 8;
  std::function<void(const std::string&)> progress;  ///< one status line at a time
  /// -v: each variant as it is compiled (with the compiler's whole log), verified and timed;
  /// one call at a time.
  std::function<void(variant_event, const record&, const std::string& log)> on_variant;
};

struct tune_result {
  std::vector<record> records;  ///< one per config of the space, in enumeration order
  std::optional<size_t> best;
  double lowp_error = 0, allowed_error = 0;
  double rounding_error = 0;  ///< the output's own rounding (reference_outputs::rounding_error)
  /// Which bound set allowed_error: "naive" or "rounding" (verify/tolerance.hpp); empty when
  /// nothing was verified.
  std::string bound;
  double compile_seconds = 0, total_seconds = 0;
  int compiled = 0, cached = 0;
  int verified = 0, screened = 0, refined = 0;  ///< verified: passed the checks
  double verify_seconds = 0, screen_seconds = 0, refine_seconds = 0;
  double reference_seconds = 0;  ///< the inputs, the GPU reference and the CPU-checked rows
  /// Variants re-run in fresh processes after one lost the device context (the command line's
  /// isolated re-runs), and how long that took; they are not in the counts above.
  int rerun = 0;
  double rerun_seconds = 0;
  bool budget_spent = false;  ///< --budget-s ran out before every variant was measured
  std::string pruning;  ///< pruning_summary()
  std::string best_cubin;
  /// Indices of records not run because an earlier variant lost the device context and the device
  /// could not be reset in this process (the command line re-runs them in a fresh process).
  std::vector<size_t> not_run;
  /// The record whose kernels never finished (options.timing.kernel_timeout_s). They keep the
  /// device busy until the process exits, so the variants after it were not run (nor can
  /// anything else run on the device in this process).
  std::optional<size_t> hung;
};

/// The configs a tune of s runs: options.configs, or the space for s (for_problem; sm_count 0 when
/// the device is not known), options.samples of them drawn with options.seed for --search random.
std::vector<tile_config> configs_of(const tune_options& options, const problem& s, int sm_count);

/// The backward variants a tune of s (pass bwd) runs: those of options.family's kernels among
/// options.backward_configs, or among the defaults (backward_default_configs) when none are given.
std::vector<backward_config> backward_configs_of(const tune_options& options, const problem& s);

/// Whether r is not measurably slower than `fastest`: the 95% confidence intervals of their medians
/// (median * (1 +- noise), record::noise) overlap, and r's median is within max_tie_gap of it.
bool within_noise_of(const record& r, const record& fastest);

/// Near-ties go to the simpler config: among ok records within_noise_of the fastest, the simplest
/// (simpler_than) wins, so a "tied" winner is never measurably slower. When any ok record was
/// measured in full, screened-only ones (measurement::screened) cannot win.
/// objective::energy: the fewest joules per call among those that can win with the energy
/// measured; when none has it, the rule of objective::time.
std::optional<size_t> choose_best(const std::vector<record>& rows, objective goal = objective::time);
/// Sets record::rank: 1 for `best`, then 2, 3, ... for the other ok records by median (fully
/// measured ones before screened-only ones; objective::energy: by joules per call, those with
/// the energy measured first); record::tied on `best` when, by time, a record ranked after it has
/// a faster median.
void assign_ranks(std::vector<record>& rows, std::optional<size_t> best, objective goal = objective::time);

/// Device memory a tuning run of s needs (inputs, outputs, reference, L2 flush buffer).
int64_t tuning_memory_bytes(const problem& s, int64_t l2_bytes, int64_t reference_chunk_bytes);

/// Tunes s's pass: the forward (options.family's kernels), or the backward (pass bwd: the family's
/// backward kernels, checked against the gradients of the materialized attention with the
/// reference forward's O and LSE as their inputs; TFLOPS count 2.5 times the forward's FLOPs).
/// Throws invalid_input when the shape cannot run on the device (too large for memory or grid),
/// when options.family is not of the device's backend or has no backward kernels for pass bwd, or
/// for pass fwdbwd (two runs: fwd, then bwd). A variant that hangs ends the run (tune_result::hung).
tune_result tune(const problem& s, const gpu_info& gpu, const compile_cache& cache,
                 const tune_options& options);

/// No device: build every variant for `arch`; records end as compiled/compile_error/pruned.
tune_result compile_only(const problem& s, const std::string& arch, const compile_cache& cache,
                         const tune_options& options);

/// Runs the best variant once more on fresh inputs (of kind `inputs`) and writes q, k, v, o, lse
/// as .npy to dir.
void dump_best(const problem& s, const gpu_info& gpu, const compile_cache& cache, const tune_result& result,
               uint64_t seed, input_kind inputs, double kernel_timeout_s, const std::string& dir);

}  // namespace attn
