#pragma once
// One row of results: a variant of a kernel family on one shape on one device.
#include <cstdint>
#include <string>

#include "core/backward_config.hpp"
#include "core/config.hpp"
#include "core/input_kind.hpp"
#include "core/problem.hpp"

namespace attn {

// 2: added "rank"; 3: added "kernel_hash"; 4: added "noise", "measured" and the clocks (sm_clock_*,
// temperature_c, power_w, throttle) at the end, and the "#end" line; 5: added "inputs" and "bound"
// at the end; 6: added the roofline columns ("gbps", "copy_fraction", "copy_gbps") and the energy
// ("joules_per_call", "tflops_per_watt") and the timing regime ("regime", "settle_ms") at the end,
// then the decode fields "page_size" and "kv_lens" after them (problem_fields(): since_schema 6).
// Version 3, 4 and 5 files are still read (their inputs were standard normal before 5; the columns
// added since read as 0 and burst, their problems contiguous with one K/V length); 7: the variant
// fields "window_left", "window_right", "softcap" at the end; 8: "head_dim_v" (dv) at the end;
// 9: "seqlens" and "kv_seqlens" (a packed batch) at the end; 10: "pass" (fwd, bwd or fwdbwd) at the
// end (an older file's rows read as fwd).
constexpr int csv_schema_version = 10;
/// The columns before version 4, written before the "#end" line existed: read with a warning.
constexpr int csv_schema_version_without_end_line = 3;

struct device_desc {
  std::string name;          ///< "NVIDIA H200", or "(compile-only)"
  std::string arch;          ///< "sm_90", "sm_90a", ...
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::string cuda_version;  ///< runtime/driver, "13.0"
  std::string nvrtc_version;  ///< "13.0"
};

/// How a variant was timed: not at all, by the short screening only, or to full precision.
enum class measurement { none, screened, full };
std::string to_string(measurement m);            ///< "", "screened", "full"
measurement parse_measurement(const std::string& text);  ///< throws invalid_input

/// How the timed repetitions met the GPU (--regime): burst (from whatever clock the GPU was at, as
/// a call among others sees it) or sustained (after running the kernel back to back until the SM
/// clock settled, as a long run of it sees it).
enum class timing_regime { burst, sustained };
std::string to_string(timing_regime r);                ///< "burst", "sustained"
timing_regime parse_regime(const std::string& text);  ///< throws invalid_input naming the text

/// NVML's "GPU idle" throttle reason: the only one that says nothing about the measurement.
constexpr uint64_t throttle_idle = 0x1;

/// The GPU's state around one variant's timing, read through NVML (run/nvml.hpp); all 0 when
/// NVML is absent.
struct clock_state {
  int sm_clock_before_mhz = 0, sm_clock_after_mhz = 0;
  int temperature_c = 0;       ///< after
  double power_w = 0;          ///< after
  uint64_t throttle = 0;       ///< NVML's throttle (clocks event) reason bits set before or after
};

enum class status { ok, wrong, compile_error, pruned, launch_error, compiled };
std::string to_string(status s);  ///< "ok", "wrong", "compile_error", "pruned", "launch_error", "compiled"
status parse_status(const std::string& text);  ///< throws invalid_input

struct record {
  device_desc device;
  attn::problem shape;
  std::string family = "fa2";
  /// The forward's config; a backward record's (shape.pass bwd) holds its dK/dV kernel's tile
  /// (kv_block_m, kv_block_n, kv_warps, kv_stages): the CSV's block_m ... stages columns.
  tile_config config;
  /// shape.pass bwd: the backward variant (config_name() writes it).
  backward_config backward;
  attn::status status = status::pruned;
  std::string message;  ///< why pruned / compile error / launch error / error vs allowed
  double compile_ms = 0;  ///< 0 when it came from the cache
  bool cached = false;
  int registers = 0;
  int spill_bytes = 0;  ///< spill stores + spill loads reported by ptxas
  int64_t shared_memory_bytes = 0;
  int reps = 0;
  double median_ms = 0, iqr_ms = 0, tflops = 0;
  double max_error = 0, allowed_error = 0;
  int64_t materialized_bytes = 0;  ///< extra memory a materializing implementation needs
  int64_t fused_extra_bytes = 0;   ///< measured extra memory of the fused kernel (its LSE)
  double memory_saving_ratio = 0;  ///< materialized_bytes / fused_extra_bytes
  int rank = 0;  ///< 1 = the tuner's choice, then the other ok variants by median; 0 = not ranked
  std::string kernel_hash;  ///< hash of the kernels/ sources compiled (16 hex digits)
  double noise = 0;  ///< relative 95% CI half-width of median_ms (run/noise.hpp), 0.01 = 1%
  attn::measurement measured = measurement::none;
  clock_state clocks;
  /// Rank 1 by the tie rule (within the noise of a faster median, and simpler), not by its median.
  bool tied = false;
  attn::input_kind inputs = input_kind::normal;  ///< what it was checked on (--inputs)
  /// Which bound set allowed_error (verify/tolerance.hpp): "naive" (2x the naive low-precision
  /// error) or "rounding" (a multiple of the output's own rounding); empty when not verified.
  std::string bound;
  /// The memory the call moved at the least (moved_bytes: Q, K, V read, O and LSE written) over
  /// median_ms, in 1e9 bytes/s; 0 when not timed.
  double gbps = 0;
  double copy_fraction = 0;  ///< gbps / copy_gbps; 0 when the copy bandwidth was not measured
  double copy_gbps = 0;      ///< the run's copy bandwidth (core/rates.hpp); 0 = not measured
  /// NVML's energy counter over the timed repetitions (each with its L2 flush) per repetition;
  /// 0 = not measured (no NVML, no counter, or the counter did not move).
  double joules_per_call = 0;
  double tflops_per_watt = 0;  ///< attention FLOPs per joule / 1e12; 0 = not measured
  timing_regime regime = timing_regime::burst;  ///< how it was timed (files before schema 6: burst)
  /// sustained: how long the kernel ran back to back before its timing; 0 for burst.
  double settle_ms = 0;
};

/// The variant's name as tables, CSV, JSON and databases write it: the backward's
/// (kv_m32_n64_w4_s2-q_m64_n64_w4_s2) for a backward record, the forward config's (m128_n64_w4_s2) else.
std::string config_name(const record& r);
/// A backward record's config: the backward variant, its dK/dV kernel's tile in config.
void set_backward_config(record& r, const backward_config& c);

}  // namespace attn
