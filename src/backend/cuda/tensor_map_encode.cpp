// cuTensorMapEncodeTiled without linking libcuda: the runtime hands out the driver's entry point
// (cudaGetDriverEntryPointByVersion), and cuda.h is used for its types and enums only.
#include <cuda.h>
#include <cuda_runtime.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/cuda/tensor_map_encode.hpp"
#include "backend/runtime.hpp"
#include "common/hopper_params.cuh"

namespace attn {

namespace {

static_assert(sizeof(attn_k::tensor_map) == sizeof(CUtensorMap) && alignof(attn_k::tensor_map) == 64,
              "kernels/common/hopper_params.cuh's tensor_map must be CUtensorMap's storage");

using encode_tiled_fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                     const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

encode_tiled_fn resolve_encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t rc = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                                          &found);
  if (rc != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
    throw device_error(rc, fmt::format("cuTensorMapEncodeTiled is not available from the driver ({}, query {}): "
                                       "TMA needs a CUDA 12 or newer driver",
                                       cudaGetErrorString(rc), static_cast<int>(found)));
  return reinterpret_cast<encode_tiled_fn>(fn);
}

CUtensorMapSwizzle swizzle_mode(int bytes) {
  return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
}

}  // namespace

void encode_cuda_tensor_map(const tensor_map_args& a, void* out) {
  static const encode_tiled_fn encode = resolve_encoder();  // once per process
  // Packed GQA (a.group > 0): the head dimension splits into {head in the group, K/V head}, and a
  // box takes the group's head slots by box rows / slots rows (tensor_map.hpp).
  const bool packed = a.group > 0;
  const cuuint64_t dims[5] = {a.dims[0], packed ? a.group : a.dims[1], packed ? a.dims[1] : a.dims[2],
                              packed ? a.dims[2] : a.dims[3], packed ? a.dims[3] : 1};
  const cuuint64_t strides[4] = {packed ? a.group_stride : a.strides[0], packed ? a.strides[0] : a.strides[1],
                                 packed ? a.strides[1] : a.strides[2], a.strides[2]};
  const cuuint32_t box[5] = {a.box[0], packed ? static_cast<cuuint32_t>(a.slots) : a.box[1],
                             packed ? static_cast<cuuint32_t>(a.box[1] / a.slots) : a.box[2], 1, 1};
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult rc =
      encode(static_cast<CUtensorMap*>(out), a.bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             packed ? 5 : 4, const_cast<void*>(a.base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             swizzle_mode(a.swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS) {
    const int rank = packed ? 5 : 4;
    throw device_error(static_cast<int>(rc),
                       fmt::format("cuTensorMapEncodeTiled failed with CUresult {} for dims {}, strides {} bytes, box "
                                   "{}, {}-byte swizzle",
                                   static_cast<int>(rc), fmt::join(dims, dims + rank, "x"),
                                   fmt::join(strides, strides + rank - 1, "/"), fmt::join(box, box + rank, "x"),
                                   a.swizzle_bytes));
  }
}

}  // namespace attn
