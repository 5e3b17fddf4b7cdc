#include "backend/cuda/device.hpp"

#include <fmt/format.h>

#include "backend/cuda/check.hpp"
#include "codegen/nvrtc.hpp"

namespace attn {

void cuda_check(cudaError_t rc, const char* expression, const char* file, int line) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw cuda_error(rc, fmt::format("{}:{}: {} failed: {} ({})", file, line, expression,
                                   cudaGetErrorString(rc), cudaGetErrorName(rc)));
}

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    if (why) *why = fmt::format("{} ({})", cudaGetErrorString(rc), cudaGetErrorName(rc));
    cudaGetLastError();
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device found";
  return count;
}

std::string arch_for(int cc_major, int cc_minor) {
  return fmt::format("sm_{}{}{}", cc_major, cc_minor, cc_major == 9 && cc_minor == 0 ? "a" : "");
}

gpu_info open_cuda_device(int ordinal) {
  ATTN_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  ATTN_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  gpu_info info;
  info.ordinal = ordinal;
  info.desc.name = prop.name;
  info.desc.cc_major = prop.major;
  info.desc.cc_minor = prop.minor;
  info.desc.arch = arch_for(prop.major, prop.minor);
  info.desc.sm_count = prop.multiProcessorCount;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  info.desc.cuda_version = fmt::format("{}.{} (driver {}.{})", runtime / 1000, runtime % 1000 / 10,
                                       driver / 1000, driver % 1000 / 10);
  info.desc.nvrtc_version = nvrtc_version();
  info.limits.shared_memory_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  info.limits.max_threads_per_block = prop.maxThreadsPerBlock;
  info.limits.cc_major = prop.major;
  info.limits.cc_minor = prop.minor;
  info.l2_bytes = prop.l2CacheSize;
  info.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
  return info;
}

int64_t free_device_memory() {
  size_t free_bytes = 0, total = 0;
  ATTN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return static_cast<int64_t>(free_bytes);
}

}  // namespace attn
