#pragma once
// --regime sustained: before a full measurement the kernel runs back to back (no L2 flush) until
// the SM clock has settled, so the timing sees the clock a long run of it sees, not the boost a
// burst of calls gets from a cool, idle GPU.
#include <cstdint>
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

/// --objective energy: the board's power while the kernel runs back to back, from NVML's energy
/// counter. The counter moves in steps (about every 100 ms on the H200, where 0.1 s windows that
/// do not start and end on a step read 557-1366 W at a 700 W limit), so the window is taken between
/// two of its steps: the first step after warm_ms of running, and the first at least window_ms
/// after that one; the counter's difference over the time between them is the power. The counter
/// is read as often as the host can while each batch runs, so a step is placed within one read's
/// time (microseconds) whatever the kernel's length; the GPU idles only between batches (a launch,
/// against batches of at least batch_ms). The calls run without the L2 flush of the timing.
struct power_options {
  double warm_ms = 100;     ///< run this long before the window may open
  double window_ms = 500;   ///< the window lasts at least this long
  double max_ms = 3000;     ///< a counter that has not stepped twice by then: not measured
  double batch_ms = 2;      ///< batches (launched together, the counter read while they run) grow to this
};

struct power_reading {
  double watts = 0;      ///< 0: not measured (the counter did not step twice, or went back)
  double window_ms = 0;  ///< between the two steps
  int launches = 0;      ///< all the calls it ran, warm-up included
};

/// Runs `launch` back to back, reading `energy_mj` (the counter in millijoules) while each batch
/// runs, until the window of power_options closes or max_ms passes. energy_mj answering nullopt ends
/// it, not measured. Throws kernel_hung when a batch does not finish within kernel_timeout_s.
power_reading measure_power(const device_runtime& rt, const std::function<void(stream_t)>& launch, stream_t stream,
                            const std::function<std::optional<uint64_t>()>& energy_mj,
                            const power_options& options, double kernel_timeout_s);

}  // namespace attn
