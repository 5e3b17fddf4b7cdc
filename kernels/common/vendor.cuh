#pragma once
// The per-vendor device primitives, chosen by the compiler: device_hip.cuh under hiprtc (AMD,
// wavefronts of 64), device.cuh under NVRTC (NVIDIA, warps of 32). Both give elem_bits, to_float,
// from_float, round_to_elem, neg_inf, warp_lanes and warp_xor. device.cuh is fa2's and stays as
// fa2 compiles it, so the two warp-wide pieces for NVIDIA are here.
#if defined(__HIPCC_RTC__) || defined(__HIP_DEVICE_COMPILE__)
#include "common/device_hip.cuh"
#else
#include "common/device.cuh"

namespace attn_k {

enum : int { warp_lanes = 32 };  // an enumerator: no storage in the module

__device__ __forceinline__ float warp_xor(float x, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, x, lane_mask);
}

}  // namespace attn_k
#endif
