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
/// x of lane `lane` of this warp.
__device__ __forceinline__ float warp_read(float x, int lane) { return __shfl_sync(0xffffffffu, x, lane); }

// Programmatic dependent launch (sm_90 and up): a kernel launched as the dependent of the one
// before it on the stream (device_runtime::launch_dependent) may start as that kernel's blocks end
// (none signals earlier: a hopper split kernel that did so at its start was in flight when a test's
// variant hung, NOTES D8); wait_for_prior_grid() holds it until that kernel has finished and its
// writes are visible. Launched plainly, the wait returns at once. Below sm_90 it is nothing.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace attn_k
#endif
#if defined(__HIPCC_RTC__) || defined(__HIP_DEVICE_COMPILE__)
namespace attn_k {
__device__ __forceinline__ void wait_for_prior_grid() {}
}  // namespace attn_k
#endif
