#pragma once
// Rates derived from a variant's measured time: the memory it moved per second, set against the
// device's copy bandwidth (the roofline of a memory-bound problem such as decode).
#include <cstdint>
#include <string>

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

}  // namespace attn
