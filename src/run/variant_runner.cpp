#include "run/variant_runner.hpp"

#include <fmt/format.h>

namespace attn {

variant_runner::variant_runner(const record& tuned, const gpu_info& gpu, const compile_cache& cache, uint64_t seed)
    : m_rt(runtime_of(gpu)) {
  const problem& s = tuned.shape;
  const bool backward = s.pass == attention_pass::bwd;
  tune_options t;
  t.family = tuned.family;
  if (backward) t.backward_configs = {tuned.backward};
  else t.configs = {tuned.config};  // exactly this config, its knob (mfma's waves_per_eu) included
  t.seed = seed;
  t.timing.min_reps = t.timing.max_reps = 3;
  t.timing.min_total_ms = 0;
  const tune_result r = tune(s, gpu, cache, t);
  m_record = r.records.front();
  if (m_record.status != status::ok)
    throw std::runtime_error(fmt::format("{} on {} is {}: {}", config_name(m_record), describe(s),
                                         to_string(m_record.status), m_record.message));
  m_support = load_support(m_rt, cache, s.dtype, gpu.desc.arch);
  m_problem = std::make_unique<device_problem>(s, *m_support, seed + 1);
  if (backward) {
    const int64_t chunk = t.reference_chunk_bytes;
    const reference_outputs forward = compute_reference(*m_support, *m_problem, chunk);
    m_gradients = std::make_unique<backward_reference>(
        compute_backward_reference(*m_support, *m_problem, forward, seed + 1, chunk));
    m_backward = std::make_unique<loaded_backward>(load_backward(m_rt, r.best_cubin, tuned.backward, s, gpu.ordinal));
    m_bwd_params = make_bwd_params(s, backward_tensors_of(*m_problem, *m_gradients));
    m_call = [this](stream_t st) { run_backward(m_rt, *m_backward, m_bwd_params, st); };
  } else {
    m_kernel = std::make_unique<loaded_variant>(load_variant(m_rt, r.best_cubin, m_record, gpu.ordinal));
    m_plan = plan_launch(*m_kernel, m_record, *m_problem, gpu);
    m_call = [this](stream_t st) { launch(m_rt, m_plan, st); };
  }
  m_flusher = std::make_unique<l2_flusher>(m_rt, gpu.l2_bytes);
  m_stream = std::make_unique<device_stream>(m_rt);
  for (int i = 0; i < 3; ++i) m_call(m_stream->get());  // warm-up
  m_rt.wait_for_kernels(m_stream->get(), m_kernel_timeout_s);
}

double variant_runner::time_once() {
  m_flusher->flush(m_stream->get());
  event_pair events(m_rt);
  events.start(m_stream->get());
  m_call(m_stream->get());
  events.stop(m_stream->get());
  m_rt.wait_for_kernels(m_stream->get(), m_kernel_timeout_s);
  return events.elapsed_ms();
}

}  // namespace attn
