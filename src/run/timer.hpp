#pragma once
// Kernel timing: CUDA events around each launch, warm-up first, L2 flushed before every
// repetition (cold-cache numbers, as a real model sees them), median and IQR of the repetitions.
#include <cuda_runtime_api.h>

#include <functional>

#include "backend/cuda/memory.hpp"
#include "run/stats.hpp"

namespace attn {

struct timing_options {
  int warmup = 3;
  int min_reps = 20;         ///< always at least this many
  int max_reps = 300;        ///< never more
  double min_total_ms = 250; ///< keep repeating until the timed kernels add up to this
};

/// Writes a buffer of twice the L2 size, so that no input stays cached between repetitions.
class l2_flusher {
 public:
  explicit l2_flusher(int64_t l2_bytes) : m_buffer(2 * l2_bytes) {}
  void flush(cudaStream_t stream);

 private:
  device_buffer m_buffer;
  int m_round = 0;
};

/// Event pair: movable, not copyable; the destructor never throws.
class event_pair {
 public:
  event_pair();
  ~event_pair();
  event_pair(event_pair&& o) noexcept;
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
  event_pair& operator=(event_pair&&) = delete;
  void start(cudaStream_t s);
  void stop(cudaStream_t s);
  float elapsed_ms() const;  ///< after synchronization

 private:
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
};

/// Times `launch` (which enqueues one kernel on the stream). Throws cuda_error on failure.
summary time_kernel(const std::function<void(cudaStream_t)>& launch, l2_flusher& flusher,
                    const timing_options& options, cudaStream_t stream);

}  // namespace attn
