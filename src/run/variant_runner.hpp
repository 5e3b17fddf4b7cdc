#pragma once
// A tuned variant ready to launch again and again (for attn-bench): verified once through the
// tuner, then timed one launch at a time with events and a cold L2.
#include <memory>

#include "run/launch.hpp"
#include "run/timer.hpp"
#include "run/tuner.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

class variant_runner {
 public:
  /// Compiles (through the cache) and verifies the config of `family` on fresh inputs; throws
  /// std::runtime_error with the reason when it is not ok (also when it hung: then the device's
  /// runtime is hung() and nothing more can run on it in this process).
  variant_runner(const std::string& family, const problem& s, const tile_config& c, const gpu_info& gpu,
                 const compile_cache& cache, uint64_t seed);
  variant_runner(const variant_runner&) = delete;
  variant_runner& operator=(const variant_runner&) = delete;

  /// Flushes the L2, then times one launch; milliseconds. Throws kernel_hung.
  double time_once();
  const record& verified() const { return m_record; }

 private:
  const device_runtime& m_rt;
  double m_kernel_timeout_s = timing_options{}.kernel_timeout_s;
  record m_record;
  std::unique_ptr<support_kernels> m_support;
  std::unique_ptr<device_problem> m_problem;
  std::unique_ptr<loaded_variant> m_kernel;
  launch_plan m_plan;  ///< made once: the hopper family's tensor maps are encoded here
  std::unique_ptr<l2_flusher> m_flusher;
  std::unique_ptr<device_stream> m_stream;
};

}  // namespace attn
