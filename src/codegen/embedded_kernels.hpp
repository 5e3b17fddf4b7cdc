#pragma once
// The kernels/ sources, embedded at build time (scripts/embed_kernels.cmake).
#include <string>
#include <vector>

namespace attn {

struct embedded_file {
  const char* name;  ///< path relative to kernels/, e.g. "fa2.cuh", "common/mma.cuh"
  const char* text;
};

const std::vector<embedded_file>& embedded_kernel_files();

}  // namespace attn
