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
};

}  // namespace attn_k
