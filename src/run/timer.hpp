#pragma once
// Kernel timing: device events around each launch, warm-up first, L2 flushed before every
// repetition (cold-cache numbers, as a real model sees them), median and IQR of the repetitions.
#include <functional>

#include "backend/resources.hpp"
#include "core/record.hpp"
#include "run/noise.hpp"
#include "run/stats.hpp"

namespace attn {

struct timing_options {
  int warmup = 3;
  int min_reps = 20;         ///< always at least this many
  int max_reps = 300;        ///< never more
  double min_total_ms = 0;   ///< keep repeating until the timed kernels add up to this
  double max_total_ms = 250; ///< stop once they add up to this (the time cap), however noisy
  /// Stop once the median's 95% confidence half-width is within this fraction of it
  /// (relative_median_noise); 0: only the caps stop.
  double max_noise = 0.01;
  /// One wait for a variant's kernels (its verification run, its warm-up, a batch of up to 10
  /// timed launches) that lasts longer is a hang: kernel_hung.
  double kernel_timeout_s = 60;
  /// sustained: the kernel first runs back to back until the SM clock settles (run/sustain.hpp).
  timing_regime regime = timing_regime::burst;
  /// --objective energy: after the timed repetitions the kernel runs back to back for a window of
  /// NVML's energy counter at least this long (measure_power, run/sustain.hpp); 0: energy is not
  /// measured (the time objective).
  double energy_window_ms = 0;
};

/// Writes a buffer of twice the L2 size, so that no input stays cached between repetitions.
class l2_flusher {
 public:
  l2_flusher(const device_runtime& rt, int64_t l2_bytes) : m_rt(&rt), m_buffer(rt, 2 * l2_bytes) {}
  void flush(stream_t stream);

 private:
  const device_runtime* m_rt;
  device_buffer m_buffer;
  int m_round = 0;
};

/// Event pair: movable, not copyable; the destructor never throws.
class event_pair {
 public:
  explicit event_pair(const device_runtime& rt);
  ~event_pair();
  event_pair(event_pair&& o) noexcept;
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
  event_pair& operator=(event_pair&&) = delete;
  void start(stream_t s);
  void stop(stream_t s);
  float elapsed_ms() const;  ///< after synchronization

 private:
  const device_runtime* m_rt;
  event_t m_start = nullptr, m_stop = nullptr;
};

/// The stopping rule of these options (noise.hpp).
stopping_rule stopping_rule_of(const timing_options& options);

/// Times `launch` (which enqueues one kernel on the stream) until enough_samples(); the summary's
/// noise is relative_median_noise of the samples. Throws device_error on failure,
/// kernel_hung when the kernels do not finish.
summary time_kernel(const device_runtime& rt, const std::function<void(stream_t)>& launch, l2_flusher& flusher,
                    const timing_options& options, stream_t stream);

}  // namespace attn
