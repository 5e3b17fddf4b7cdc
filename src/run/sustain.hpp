#pragma once
// --regime sustained: before a full measurement the kernel runs back to back (no L2 flush) until
// the SM clock has settled, so the timing sees the clock a long run of it sees, not the boost a
// burst of calls gets from a cool, idle GPU.
#include <functional>
#include <optional>
#include <vector>

#include "backend/runtime.hpp"

namespace attn {

struct sustain_options {
  double min_ms = 200;   ///< run at least this long, settled or not
  double max_ms = 2000;  ///< and never longer (a clock that keeps drifting is said, not waited on)
  double read_every_ms = 20;  ///< the SM clock is read about this often
  int window = 4;             ///< settled: the last `window` readings ...
  double tolerance = 0.01;    ///< ... within this fraction of their largest
};

/// Whether the last `window` readings (MHz, oldest first) lie within `tolerance` of the largest
/// of them; false with fewer readings or a reading of 0.
bool clock_settled(const std::vector<int>& mhz, int window, double tolerance);

struct sustain_result {
  double waited_ms = 0;  ///< how long the kernel ran back to back
  bool settled = false;  ///< false when the cap came first, or without a clock to read
  int launches = 0;
  std::vector<int> readings;  ///< the SM clock as it was read, MHz
};

/// Runs `launch` back to back on the stream, in batches that grow to about read_every_ms each,
/// reading `sm_clock` after each batch, until clock_settled() and min_ms have passed, or max_ms.
/// sm_clock nullptr (no NVML) or answering nullopt: runs min_ms, settled false. Throws
/// kernel_hung when a batch does not finish within kernel_timeout_s.
sustain_result run_until_settled(const device_runtime& rt,
                                 const std::function<void(stream_t)>& launch, stream_t stream,
                                 const std::function<std::optional<int>()>& sm_clock,
                                 const sustain_options& options, double kernel_timeout_s);

}  // namespace attn
