#pragma once
// Rates derived from a variant's measurements: the memory it moved per second, set against the
// device's copy bandwidth (the roofline of a memory-bound problem such as decode), and the energy
// of one call from NVML's energy counter.
#include <cstdint>
#include <string>

#include "core/problem.hpp"

namespace attn {

/// The device's copy bandwidth, measured once per run (run/copy_bandwidth.hpp): a device-to-device
/// copy of `bytes`, counted as read plus written bytes (2 * bytes) over its median time.
struct copy_bandwidth {
  double gbps = 0;    ///< 1e9 bytes per second; 0 = not measured
  int64_t bytes = 0;  ///< the size of one copy
  int reps = 0;       ///< timed copies
  std::string note;   ///< why it was not measured ("no device: --compile-only")
};

/// "copy bandwidth 4267 GB/s (device-to-device copy of 1.0 GiB, read + write bytes = 2x its size,
/// median of 5)", or "copy bandwidth not measured (why)".
std::string describe(const copy_bandwidth& c);

/// 1e9 bytes per second of moving `bytes` in `milliseconds`; 0 when the time is not positive.
double gbps(int64_t bytes, double milliseconds);
/// achieved / copy; 0 when the copy bandwidth was not measured.
double copy_fraction(double achieved_gbps, double copy_gbps);

/// Joules per call: the board's power while the kernel runs back to back (measure_power in
/// run/sustain.hpp: NVML's energy counter between two of its steps) times the call's median. 0 (not
/// measured, never a guess) when the power is not positive or the median is not.
double joules_per_call(double watts, double call_ms);
/// TFLOPS per watt, which is TFLOP per joule: attention_flops / joules_per_call / 1e12; 0 when
/// the energy was not measured.
double tflops_per_watt(const problem& s, double joules_per_call);

}  // namespace attn
