#pragma once
// CUDA error checking: a failing call throws with file:line, the call's text and CUDA's message,
// after clearing the (non-sticky) error so that the next variant starts clean.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace attn {

struct cuda_error : std::runtime_error {
  cuda_error(cudaError_t c, const std::string& what) : std::runtime_error(what), code(c) {}
  cudaError_t code;
};

void cuda_check(cudaError_t rc, const char* expression, const char* file, int line);

}  // namespace attn

#define ATTN_CUDA_CHECK(call) ::attn::cuda_check((call), #call, __FILE__, __LINE__)
