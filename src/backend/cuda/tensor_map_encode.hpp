#pragma once
#include "backend/tensor_map.hpp"

namespace attn {

/// Writes the 128-byte CUtensorMap for `a` to `out` (64-byte aligned). Throws device_error when
/// the driver lacks the encoder or refuses the arguments.
void encode_cuda_tensor_map(const tensor_map_args& a, void* out);

}  // namespace attn
