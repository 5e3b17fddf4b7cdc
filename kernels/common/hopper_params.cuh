#pragma once
// The hopper family's kernel parameter, shared verbatim by the host (src/) and the kernels.
// Plain C++ only: no host or CUDA headers, so NVRTC and g++ both accept it.
#include "common/params.cuh"

namespace attn_k {

/// CUtensorMap's storage (NVRTC has no cuda.h): encoded on the host by cuTensorMapEncodeTiled,
/// read by the copy engine from the kernel's `const __grid_constant__` parameter.
struct alignas(64) tensor_map {
  unsigned long long opaque[16];
};

/// One tensor map per tensor (boxes of Q's BLOCK_M rows, K's and V's BLOCK_N rows, O's 64 rows,
/// each one swizzle span of D wide), the problem, and the tile schedule (hopper/scheduler.cuh):
/// tiles = m_blocks x batch_heads, walked in sections of heads_per_section (batch, head) pairs
/// whose K and V fit in L2 together.
struct hopper_params {
  tensor_map q_map, k_map, v_map, o_map;
  fwd_params p;
  int m_blocks;
  int batch_heads;
  int heads_per_section;
  int tiles;
  /// Softcap's tanh as a polynomial (schedule bit 64: hopper/softmax.cuh's wg_softcap_poly): for |s|
  /// < softcap_fast_limit (raw q.k units), s (softcap_poly[0] + softcap_poly[1] s^2 + softcap_poly[2]
  /// s^4) is the capped score times scale_log2, the exponent exp2 takes. Set by the host's
  /// softcap_polynomial (src/codegen/kernel_args.cpp). Last, so the fields above keep their offsets.
  float softcap_poly[3];
  float softcap_fast_limit;
  /// The same where a warp's scores are within the narrower softcap_fast3_limit: s (softcap_poly3[0]
  /// + softcap_poly3[1] s^2), one FFMA a score less (NOTES V14).
  float softcap_poly3[2];
  float softcap_fast3_limit;
};

}  // namespace attn_k
