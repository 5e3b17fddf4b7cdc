#include "run/copy_bandwidth.hpp"

#include <fmt/format.h>

#include <vector>

#include "run/stats.hpp"
#include "run/timer.hpp"

namespace attn {

copy_bandwidth measure_copy_bandwidth(const device_runtime& rt, int64_t bytes, int reps) {
  copy_bandwidth out;
  out.bytes = bytes;
  try {
    // Room for both buffers and a margin, or the measurement would be the one to fail the run.
    const int64_t needed = 2 * bytes + (int64_t(256) << 20);
    if (const int64_t free_bytes = rt.free_memory(); free_bytes < needed) {
      out.note = fmt::format("{:.1f} GiB free, the copy needs {:.1f} GiB",
                             free_bytes / 1073741824.0, needed / 1073741824.0);
      return out;
    }
    const device_buffer from(rt, bytes), to(rt, bytes);
    const device_stream stream(rt);
    rt.memset_async(from.get(), 1, bytes, stream.get());
    rt.copy_on_device_async(to.get(), from.get(), bytes,
                            stream.get());  // untimed: first touch of `to`
    std::vector<event_pair> events;
    events.reserve(reps);
    for (int i = 0; i < reps; ++i) {
      events.emplace_back(rt);
      events.back().start(stream.get());
      rt.copy_on_device_async(to.get(), from.get(), bytes, stream.get());
      events.back().stop(stream.get());
    }
    rt.synchronize(stream.get());
    std::vector<double> ms;
    for (const auto& e : events) ms.push_back(e.elapsed_ms());
    const double median = summarize(std::move(ms)).median;
    out.gbps = gbps(2 * bytes, median);
    out.reps = reps;
    if (!(out.gbps > 0)) out.note = fmt::format("the copy's median time was {} ms", median);
  } catch (const std::exception& e) {
    out.gbps = 0;
    out.note = e.what();
  }
  return out;
}

}  // namespace attn
