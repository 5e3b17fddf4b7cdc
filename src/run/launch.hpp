#pragma once
// One launch of a compiled fa2 variant on a problem: grid (query blocks, heads, batch).
#include "report/record.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

void launch_variant(cudaKernel_t kernel, const record& r, const problem& pr, cudaStream_t stream);

}  // namespace attn
