#include "backend/runtime.hpp"

namespace attn {

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

const kernel_family& default_family(backend b) { return b == backend::hip ? mfma_family() : fa2_family(); }

}  // namespace attn
