#include "backend/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

namespace attn {

void device_runtime::encode_tensor_map(const tensor_map_args&, void*) const {
  throw device_error(0, "this runtime has no TMA tensor maps (a CUDA family for sm_90a needs them)");
}

kernel_hung::kernel_hung(double waited_s)
    : std::runtime_error(
          fmt::format("hung: not finished after {:g} s (the GPU stays busy until this process exits)", waited_s)),
      seconds(waited_s) {}

bool poll_until(const std::function<bool()>& done, double timeout_s) {
  using clock = std::chrono::steady_clock;
  // At most 1e9 s (forever, for a tuner), which the clock's 64-bit nanoseconds hold: so infinity works.
  const double limit_s = timeout_s > 0 ? std::min(timeout_s, 1e9) : 0;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(limit_s));
  auto pause = std::chrono::duration_cast<clock::duration>(std::chrono::microseconds(50));
  const auto longest = std::chrono::duration_cast<clock::duration>(std::chrono::milliseconds(5));
  for (;;) {
    if (done()) return true;
    const auto now = clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min(pause, deadline - now));
    pause = std::min(pause * 2, longest);
  }
}

bool device_runtime::wait(stream_t s, double timeout_s) const {
  return poll_until([&] { return finished(s); }, timeout_s);
}

void device_runtime::wait_for_kernels(stream_t s, double timeout_s) const {
  if (wait(s, timeout_s)) return;
  m_hung = true;
  throw kernel_hung(timeout_s);
}

int leave_with(int code) {
  const device_runtime* hip = hip_runtime();
  if (cuda_runtime().hung() || (hip && hip->hung())) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  }
  return code;
}

const device_runtime& runtime_for(backend b) {
  if (b == backend::cuda) return cuda_runtime();
  if (const device_runtime* hip = hip_runtime()) return *hip;
  throw invalid_input(
      "this attn-tune was built without HIP: install libamdhip64-dev and libhiprtc-builtins5, then rebuild "
      "(scripts/setup.sh does)");
}

backend detect_backend() {
  const device_runtime* hip = hip_runtime();
  return hip && hip->device_count(nullptr) > 0 ? backend::hip : backend::cuda;
}

}  // namespace attn
