#pragma once
// The CUDA device at hand: what it is and what it allows (the CUDA side of device_runtime).
#include <cstdint>
#include <string>

#include "backend/runtime.hpp"

namespace attn {

/// Number of usable CUDA devices; 0 (and the reason in *why) when there is none or no driver.
int cuda_device_count(std::string* why);
/// Queries device `ordinal` and makes it current. Throws device_error.
gpu_info open_cuda_device(int ordinal);
/// Free device memory now, bytes.
int64_t free_device_memory();
/// "sm_90a" for cc 9.0 (the arch-specific target, for wgmma-capable families), else "sm_NN".
std::string arch_for(int cc_major, int cc_minor);

}  // namespace attn
