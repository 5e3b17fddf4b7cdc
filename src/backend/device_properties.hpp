#pragma once
// The fields that cudaDeviceProp and hipDeviceProp_t share by name, into gpu_info: one template,
// instantiated by each backend's translation unit with its own vendor's struct.
#include <cstdint>

#include "backend/runtime.hpp"

namespace attn {

template <class device_prop>
void fill_common_properties(gpu_info& info, const device_prop& prop) {
  info.desc.name = prop.name;
  info.desc.cc_major = prop.major;
  info.desc.cc_minor = prop.minor;
  info.desc.sm_count = prop.multiProcessorCount;  // compute units on AMD
  info.limits.max_threads_per_block = prop.maxThreadsPerBlock;
  info.limits.cc_major = prop.major;
  info.limits.cc_minor = prop.minor;
  info.warp_size = prop.warpSize;
  info.l2_bytes = prop.l2CacheSize;
  info.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
}

}  // namespace attn
