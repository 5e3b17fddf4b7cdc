#pragma once
// A tuned variant ready to launch again and again (for attn-bench): verified once through the
// tuner, then timed one call at a time with events and a cold L2. A backward variant's call is its
// three or four kernels, on the reference forward's O and LSE and a random dO.
#include <functional>
#include <memory>

#include "codegen/backward.hpp"
#include "run/launch.hpp"
#include "run/timer.hpp"
#include "run/tuner.hpp"
#include "verify/gpu_gradients.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

class variant_runner {
 public:
  /// Compiles (through the cache) and verifies `tuned`'s variant (its family, shape and pass, its
  /// config or backward variant) on fresh inputs; throws std::runtime_error with the reason when it
  /// is not ok (also when it hung: then the device's runtime is hung() and nothing more can run on
  /// it in this process).
  variant_runner(const record& tuned, const gpu_info& gpu, const compile_cache& cache, uint64_t seed);
  variant_runner(const variant_runner&) = delete;
  variant_runner& operator=(const variant_runner&) = delete;

  /// Flushes the L2, then times one call; milliseconds. Throws kernel_hung.
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
  // The backward's: its kernels, its inputs and outputs, their parameter block.
  std::unique_ptr<loaded_backward> m_backward;
  std::unique_ptr<backward_reference> m_gradients;
  attn_k::bwd_params m_bwd_params{};
  std::function<void(stream_t)> m_call;
  std::unique_ptr<l2_flusher> m_flusher;
  std::unique_ptr<device_stream> m_stream;
};

}  // namespace attn
