#pragma once
// Machine-readable output (--json FILE|-, export --format json), written with nlohmann::json
// (Debian's nlohmann-json3-dev): the run's metadata, every variant, the best per shape.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rates.hpp"
#include "core/record.hpp"

namespace attn {

struct run_metadata {
  std::string command;  ///< "tune", "sweep", "check", or with " --compile-only"
  uint64_t seed = 0;
  input_kind inputs = input_kind::normal;  ///< --inputs
  device_desc device;   ///< name "(compile-only)" without a GPU
  std::string driver_version;
  int sm_clock_mhz = 0, memory_clock_mhz = 0;
  std::vector<std::string> arguments;  ///< the command line after the program's name
  copy_bandwidth copy;  ///< measured once per run; gbps 0 (and a note) when not
  std::string objective = "time";  ///< --objective: what the best was chosen by
  std::string regime = "burst";    ///< --regime: how the full measurements met the GPU
  /// Why the energy columns are empty (NVML absent, no energy counter, compile-only); "" = measured.
  std::string energy_note;
};

/// The document as indented text with a final newline. Text that is not valid UTF-8 (a device or
/// file name) has each invalid byte replaced by U+FFFD: JSON holds Unicode text only.
std::string json_text(const nlohmann::ordered_json& doc);

/// {"attn_tune": {version, schema}, "run": metadata, "variants": [every record], "best": [one
/// per shape with an ok variant]} as indented JSON text with a final newline.
std::string results_json(const run_metadata& meta, const std::vector<record>& rows);

/// One row of check's report.
struct check_line {
  std::string shape, family, config, verdict, why;
  double baseline_ms = 0;
  std::optional<double> now_ms, ratio;
};
std::string check_json(const run_metadata& meta, const std::string& baseline, const std::vector<check_line>& lines,
                       const std::optional<std::string>& kernel_change);

}  // namespace attn
