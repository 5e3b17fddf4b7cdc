#include "run/variant_runner.hpp"

#include <fmt/format.h>

namespace attn {

variant_runner::variant_runner(const std::string& family, const problem& s, const tile_config& c,
                               const gpu_info& gpu, const compile_cache& cache, uint64_t seed)
    : m_rt(runtime_of(gpu)) {
  tune_options t;
  t.family = family;
  t.configs = {c};  // exactly this config, its knob (mfma's waves_per_eu) included
  t.seed = seed;
  t.timing.min_reps = t.timing.max_reps = 3;
  t.timing.min_total_ms = 0;
  const tune_result r = tune(s, gpu, cache, t);
  m_record = r.records.front();
  if (m_record.status != status::ok)
    throw std::runtime_error(fmt::format("{} on {} is {}: {}", name(c), describe(s), to_string(m_record.status),
                                         m_record.message));
  m_support = load_support(m_rt, cache, s.dtype, gpu.desc.arch);
  m_problem = std::make_unique<device_problem>(s, *m_support, seed + 1);
  m_kernel = std::make_unique<loaded_variant>(load_variant(m_rt, r.best_cubin, m_record, gpu.ordinal));
  m_plan = plan_launch(*m_kernel, m_record, *m_problem, gpu);
  m_flusher = std::make_unique<l2_flusher>(m_rt, gpu.l2_bytes);
  m_stream = std::make_unique<device_stream>(m_rt);
  for (int i = 0; i < 3; ++i) launch(m_rt, m_plan, m_stream->get());  // warm-up
  m_rt.wait_for_kernels(m_stream->get(), m_kernel_timeout_s);
}

double variant_runner::time_once() {
  m_flusher->flush(m_stream->get());
  event_pair events(m_rt);
  events.start(m_stream->get());
  launch(m_rt, m_plan, m_stream->get());
  events.stop(m_stream->get());
  m_rt.wait_for_kernels(m_stream->get(), m_kernel_timeout_s);
  return events.elapsed_ms();
}

}  // namespace attn
