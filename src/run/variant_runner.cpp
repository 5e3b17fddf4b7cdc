#include "run/variant_runner.hpp"

#include <fmt/format.h>

#include "run/launch.hpp"

namespace attn {

variant_runner::variant_runner(const shape& s, const tile_config& c, const gpu_info& gpu,
                               const compile_cache& cache, uint64_t seed) {
  tune_options t;
  t.space = {{c.block_m}, {c.block_n}, {c.warps}, {c.stages}};
  t.seed = seed;
  t.timing.min_reps = t.timing.max_reps = 3;
  t.timing.min_total_ms = 0;
  const tune_result r = tune(s, gpu, cache, t);
  m_record = r.records.front();
  if (m_record.status != status::ok)
    throw std::runtime_error(fmt::format("{} on {} is {}: {}", name(c), describe(s), to_string(m_record.status),
                                         m_record.message));
  m_support = load_support(cache, s.dtype, gpu.desc.arch);
  m_problem = std::make_unique<problem>(s, *m_support, seed + 1);
  m_module = std::make_unique<loaded_module>(r.best_cubin);
  m_kernel = m_module->kernel(fa2_family().kernel_symbol.c_str());
  if (m_record.shared_memory_bytes > 48 * 1024)
    set_dynamic_shared_memory(m_kernel, static_cast<int>(m_record.shared_memory_bytes), gpu.ordinal);
  m_flusher = std::make_unique<l2_flusher>(gpu.l2_bytes);
  ATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
  for (int i = 0; i < 3; ++i) launch_variant(m_kernel, m_record, *m_problem, m_stream);  // warm-up
  ATTN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
}

variant_runner::~variant_runner() {
  if (m_stream) cudaStreamDestroy(m_stream);
}

double variant_runner::time_once() {
  m_flusher->flush(m_stream);
  event_pair events;
  events.start(m_stream);
  launch_variant(m_kernel, m_record, *m_problem, m_stream);
  events.stop(m_stream);
  ATTN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
  return events.elapsed_ms();
}

}  // namespace attn
