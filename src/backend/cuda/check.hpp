#pragma once
// CUDA error checking: a failing call throws device_error with file:line, the call's text and
// CUDA's message, after clearing the (non-sticky) error so that the next variant starts clean.
#include <cuda_runtime_api.h>

#include "backend/runtime.hpp"

namespace attn {

void cuda_check(cudaError_t rc, const char* expression, const char* file, int line);

}  // namespace attn

#define ATTN_CUDA_CHECK(call) ::attn::cuda_check((call), #call, __FILE__, __LINE__)
