#include "run/sustain.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace attn {

bool clock_settled(const std::vector<int>& mhz, int window, double tolerance) {
  if (window < 1 || static_cast<int>(mhz.size()) < window) return false;
  const auto first = mhz.end() - window;
  const auto [low, high] = std::minmax_element(first, mhz.end());
  return *low > 0 && *high - *low <= tolerance * *high;
}

sustain_result run_until_settled(const device_runtime& rt,
                                 const std::function<void(stream_t)>& launch, stream_t stream,
                                 const std::function<std::optional<int>()>& sm_clock,
                                 const sustain_options& options, double kernel_timeout_s) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
  };
  sustain_result out;
  int batch = 1;
  bool can_read = static_cast<bool>(sm_clock);
  while (true) {
    const double before = elapsed_ms();
    for (int i = 0; i < batch; ++i) launch(stream);
    rt.wait_for_kernels(stream, kernel_timeout_s);
    out.launches += batch;
    // Batches grow until one lasts about read_every_ms: few clock reads for a short kernel.
    if (elapsed_ms() - before < options.read_every_ms) batch = std::min(batch * 2, 4096);
    if (can_read) {
      if (const std::optional<int> mhz = sm_clock())
        out.readings.push_back(*mhz);
      else
        can_read = false;
    }
    out.waited_ms = elapsed_ms();
    out.settled = can_read && clock_settled(out.readings, options.window, options.tolerance);
    if (out.waited_ms >= options.max_ms) break;
    if (out.waited_ms >= options.min_ms && (out.settled || !can_read)) break;
  }
  if (!can_read) out.settled = false;
  return out;
}

power_reading measure_power(const device_runtime& rt, const std::function<void(stream_t)>& launch, stream_t stream,
                            const std::function<std::optional<uint64_t>()>& energy_mj,
                            const power_options& options, double kernel_timeout_s) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(clock::now() - start).count(); };
  power_reading out;
  int batch = 1;
  std::optional<uint64_t> last;                       // the counter at the last read
  std::optional<std::pair<uint64_t, double>> opened;  // the counter and the time at the window's first step
  // Reads the counter (while a batch runs, as often as the host can, so a step is seen within a
  // read's time of it whatever the kernel's length); true when the window has closed or the
  // counter failed or went back (out.watts stays 0).
  auto read = [&]() -> bool {
    const std::optional<uint64_t> mj = energy_mj();
    const double now = elapsed_ms();
    if (!mj || (last && *mj < *last)) return true;  // a failed read, or a driver reload: not measured
    const bool stepped = last && *mj != *last;
    last = mj;
    if (!stepped || now < options.warm_ms) return false;
    if (!opened) {
      opened.emplace(*mj, now);
    } else if (now - opened->second >= options.window_ms) {
      out.window_ms = now - opened->second;
      out.watts = static_cast<double>(*mj - opened->first) / out.window_ms;  // mJ per ms
      return true;
    }
    return false;
  };
  while (elapsed_ms() < options.max_ms) {
    const double before = elapsed_ms();
    for (int i = 0; i < batch; ++i) launch(stream);
    out.launches += batch;
    bool done = false;
    do {
      done = read();
      if (elapsed_ms() - before > kernel_timeout_s * 1000) break;  // wait_for_kernels says it hung
    } while (!done && !rt.finished(stream));
    rt.wait_for_kernels(stream, kernel_timeout_s);
    if (done) return out;
    if (elapsed_ms() - before < options.batch_ms) batch = std::min(batch * 2, 4096);
  }
  return out;
}

}  // namespace attn
