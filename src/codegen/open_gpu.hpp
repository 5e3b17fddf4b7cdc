#pragma once
// A device opened for the tool or the library: the runtime's description of it, with the version
// of the compiler that builds its kernels (NVRTC, or hiprtc on AMD) in desc.nvrtc_version.
#include "backend/runtime.hpp"

namespace attn {

/// rt.open_device(ordinal) with the compiler's version filled in. Throws device_error.
gpu_info open_gpu(const device_runtime& rt, int ordinal);

}  // namespace attn
