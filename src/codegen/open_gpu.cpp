#include "codegen/open_gpu.hpp"

#include "codegen/hiprtc.hpp"
#include "codegen/nvrtc.hpp"

namespace attn {

gpu_info open_gpu(const device_runtime& rt, int ordinal) {
  gpu_info info = rt.open_device(ordinal);
  info.desc.nvrtc_version = info.backend == backend::hip ? hiprtc_version() : nvrtc_version();
  return info;
}

}  // namespace attn
