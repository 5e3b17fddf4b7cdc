#pragma once
// The CUDA device at hand: what it is and what it allows.
#include <cstdint>
#include <optional>
#include <string>

#include "codegen/family.hpp"
#include "report/record.hpp"

namespace attn {

struct gpu_info {
  int ordinal = 0;
  device_desc desc;
  resource_limits limits;
  int64_t l2_bytes = 0;
  int64_t total_memory = 0;
};

/// Number of usable CUDA devices; 0 (and the reason in *why) when there is none or no driver.
int cuda_device_count(std::string* why);
/// Queries device `ordinal` and makes it current. Throws cuda_error.
gpu_info open_cuda_device(int ordinal);
/// Free device memory now, bytes.
int64_t free_device_memory();
/// "sm_90a" for cc 9.0 (the arch-specific target, for wgmma-capable families), else "sm_NN".
std::string arch_for(int cc_major, int cc_minor);

}  // namespace attn
