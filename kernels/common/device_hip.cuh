#pragma once
// Device primitives for AMD CDNA (gfx90a) under hiprtc, the counterpart of device.cuh for
// NVIDIA: element conversion and wavefront shuffles, on clang builtins and what hiprtc provides
// (no HIP headers). A wavefront has 64 lanes.

namespace attn_k {

typedef unsigned short elem_bits;  ///< raw bf16 or fp16 bits

enum : int { warp_lanes = __AMDGCN_WAVEFRONT_SIZE };  // an enumerator: no storage in the module

template <bool BF16>
__device__ __forceinline__ float to_float(elem_bits x) {
  if constexpr (BF16) {
    return __uint_as_float(static_cast<unsigned>(x) << 16);
  } else {
    return static_cast<float>(__builtin_bit_cast(_Float16, x));
  }
}

/// Round to nearest even, as NVIDIA's cvt.rn does; NaN stays NaN.
template <bool BF16>
__device__ __forceinline__ elem_bits from_float(float x) {
  if constexpr (BF16) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<elem_bits>(u >> 16);
  } else {
    return __builtin_bit_cast(elem_bits, static_cast<_Float16>(x));
  }
}

/// Rounds a float to the element type and back: models a computation done in that type.
template <bool BF16>
__device__ __forceinline__ float round_to_elem(float x) {
  return to_float<BF16>(from_float<BF16>(x));
}

/// x of the lane whose index differs from this one's in the bits of lane_mask.
__device__ __forceinline__ float warp_xor(float x, int lane_mask) { return __shfl_xor(x, lane_mask); }
/// x of lane `lane` (< 64) of this wavefront.
__device__ __forceinline__ float warp_read(float x, int lane) { return __shfl(x, lane); }

__device__ __forceinline__ float fast_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

}  // namespace attn_k
