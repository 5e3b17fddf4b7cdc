#pragma once
// One row of results: a variant of a kernel family on one shape on one device.
#include <cstdint>
#include <string>

#include "plan/config.hpp"
#include "plan/shape.hpp"

namespace attn {

constexpr int csv_schema_version = 4;  // 2: added "rank"; 3: added "kernel_hash"; 4: the "#end" line
/// The same columns, written before the "#end" line existed: read with a warning.
constexpr int csv_schema_version_without_end_line = 3;

struct device_desc {
  std::string name;          ///< "NVIDIA H200", or "(compile-only)"
  std::string arch;          ///< "sm_90", "sm_90a", ...
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::string cuda_version;  ///< runtime/driver, "13.0"
  std::string nvrtc_version;  ///< "13.0"
};

enum class status { ok, wrong, compile_error, pruned, launch_error, compiled };
std::string to_string(status s);  ///< "ok", "wrong", "compile_error", "pruned", "launch_error", "compiled"
status parse_status(const std::string& text);  ///< throws invalid_input

struct record {
  device_desc device;
  attn::shape shape;
  std::string family = "fa2";
  tile_config config;
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
};

}  // namespace attn
