#include "run/timer.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace attn {

void l2_flusher::flush(stream_t stream) {
  m_rt->memset_async(m_buffer.get(), ++m_round & 0xff, m_buffer.bytes(), stream);
}

event_pair::event_pair(const device_runtime& rt) : m_rt(&rt) {
  m_start = rt.create_event();
  try {
    m_stop = rt.create_event();
  } catch (...) {
    rt.destroy_event(m_start);
    throw;
  }
}
event_pair::~event_pair() {
  if (m_start) m_rt->destroy_event(m_start);
  if (m_stop) m_rt->destroy_event(m_stop);
}
event_pair::event_pair(event_pair&& o) noexcept
    : m_rt(o.m_rt), m_start(std::exchange(o.m_start, nullptr)), m_stop(std::exchange(o.m_stop, nullptr)) {}
void event_pair::start(stream_t s) { m_rt->record_event(m_start, s); }
void event_pair::stop(stream_t s) { m_rt->record_event(m_stop, s); }
float event_pair::elapsed_ms() const { return m_rt->elapsed_ms(m_start, m_stop); }

stopping_rule stopping_rule_of(const timing_options& options) {
  stopping_rule rule;
  rule.min_reps = options.min_reps;
  rule.max_reps = options.max_reps;
  rule.min_total_ms = options.min_total_ms;
  rule.max_total_ms = options.max_total_ms;
  rule.max_noise = options.max_noise;
  return rule;
}

summary time_kernel(const device_runtime& rt, const std::function<void(stream_t)>& launch, l2_flusher& flusher,
                    const timing_options& options, stream_t stream) {
  for (int i = 0; i < options.warmup; ++i) launch(stream);
  rt.wait_for_kernels(stream, options.kernel_timeout_s);
  std::vector<double> samples;
  double total = 0;
  // Batches of repetitions: events of one batch are read after one synchronization.
  const stopping_rule rule = stopping_rule_of(options);
  while (!enough_samples(samples, total, rule)) {
    // Up to min_reps at once, then batches of 5, so the rule is looked at often once it may stop.
    const int n = static_cast<int>(samples.size());
    const int batch = std::min({n < options.min_reps ? std::min(10, options.min_reps - n) : 5,
                                options.max_reps - n, 10});
    std::vector<event_pair> events;
    events.reserve(batch);
    for (int i = 0; i < batch; ++i) {
      flusher.flush(stream);
      events.emplace_back(rt);
      events.back().start(stream);
      launch(stream);
      events.back().stop(stream);
    }
    rt.wait_for_kernels(stream, options.kernel_timeout_s);
    for (const auto& e : events) {
      samples.push_back(e.elapsed_ms());
      total += samples.back();
    }
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  summary out = summarize(std::move(samples));
  out.noise = relative_median_noise(sorted);
  return out;
}

}  // namespace attn
