#include "core/rates.hpp"

#include <fmt/format.h>

namespace attn {

std::string describe(const copy_bandwidth& c) {
  if (!(c.gbps > 0))
    return fmt::format("copy bandwidth not measured ({})", c.note.empty() ? "no device" : c.note);
  return fmt::format(
      "copy bandwidth {:.0f} GB/s (device-to-device copy of {:.1f} GiB, read + write bytes = 2x "
      "its "
      "size, median of {})",
      c.gbps, c.bytes / 1073741824.0, c.reps);
}

double gbps(int64_t bytes, double milliseconds) {
  if (!(milliseconds > 0)) return 0;
  return static_cast<double>(bytes) / (milliseconds * 1e6);
}

double copy_fraction(double achieved_gbps, double copy_gbps) {
  if (!(copy_gbps > 0)) return 0;
  return achieved_gbps / copy_gbps;
}

double joules_per_call(double watts, double call_ms) {
  if (!(watts > 0) || !(call_ms > 0)) return 0;
  return watts * call_ms / 1000.0;
}

double tflops_per_watt(const problem& s, double joules_per_call) {
  if (!(joules_per_call > 0)) return 0;
  return attention_flops(s) / joules_per_call / 1e12;
}

}  // namespace attn
