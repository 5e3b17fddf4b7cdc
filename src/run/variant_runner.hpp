#pragma once
// A tuned variant ready to launch again and again (for attn-bench): verified once through the
// tuner, then timed one launch at a time with events and a cold L2.
#include <memory>

#include "run/timer.hpp"
#include "run/tuner.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

class variant_runner {
 public:
  /// Compiles (through the cache) and verifies the config on fresh inputs; throws
  /// std::runtime_error with the reason when it is not ok.
  variant_runner(const shape& s, const tile_config& c, const gpu_info& gpu, const compile_cache& cache,
                 uint64_t seed);
  ~variant_runner();
  variant_runner(const variant_runner&) = delete;
  variant_runner& operator=(const variant_runner&) = delete;

  /// Flushes the L2, then times one launch; milliseconds.
  double time_once();
  const record& verified() const { return m_record; }

 private:
  record m_record;
  std::unique_ptr<support_kernels> m_support;
  std::unique_ptr<problem> m_problem;
  std::unique_ptr<loaded_module> m_module;
  cudaKernel_t m_kernel = nullptr;
  std::unique_ptr<l2_flusher> m_flusher;
  cudaStream_t m_stream = nullptr;
};

}  // namespace attn
