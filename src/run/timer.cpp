#include "run/timer.hpp"

#include <utility>
#include <vector>

#include "backend/cuda/check.hpp"

namespace attn {

void l2_flusher::flush(cudaStream_t stream) {
  ATTN_CUDA_CHECK(cudaMemsetAsync(m_buffer.get(), ++m_round & 0xff,
                                  static_cast<size_t>(m_buffer.bytes()), stream));
}

event_pair::event_pair() {
  ATTN_CUDA_CHECK(cudaEventCreate(&m_start));
  ATTN_CUDA_CHECK(cudaEventCreate(&m_stop));
}
event_pair::~event_pair() {
  if (m_start) cudaEventDestroy(m_start);
  if (m_stop) cudaEventDestroy(m_stop);
}
event_pair::event_pair(event_pair&& o) noexcept
    : m_start(std::exchange(o.m_start, nullptr)), m_stop(std::exchange(o.m_stop, nullptr)) {}
void event_pair::start(cudaStream_t s) { ATTN_CUDA_CHECK(cudaEventRecord(m_start, s)); }
void event_pair::stop(cudaStream_t s) { ATTN_CUDA_CHECK(cudaEventRecord(m_stop, s)); }
float event_pair::elapsed_ms() const {
  float ms = 0;
  ATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
  return ms;
}

summary time_kernel(const std::function<void(cudaStream_t)>& launch, l2_flusher& flusher,
                    const timing_options& options, cudaStream_t stream) {
  for (int i = 0; i < options.warmup; ++i) launch(stream);
  ATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> samples;
  double total = 0;
  // Batches of repetitions: events of one batch are read after one synchronization.
  while (static_cast<int>(samples.size()) < options.max_reps &&
         (static_cast<int>(samples.size()) < options.min_reps || total < options.min_total_ms)) {
    const int batch = std::min(10, options.max_reps - static_cast<int>(samples.size()));
    std::vector<event_pair> events;
    events.reserve(batch);
    for (int i = 0; i < batch; ++i) {
      flusher.flush(stream);
      events.emplace_back();
      events.back().start(stream);
      launch(stream);
      events.back().stop(stream);
    }
    ATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (const auto& e : events) {
      samples.push_back(e.elapsed_ms());
      total += samples.back();
    }
  }
  return summarize(std::move(samples));
}

}  // namespace attn
