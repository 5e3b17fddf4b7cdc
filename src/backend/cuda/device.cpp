#include "backend/cuda/device.hpp"

#include <fmt/format.h>

#include "backend/cuda/check.hpp"
#include "backend/device_properties.hpp"

namespace attn {

void cuda_check(cudaError_t rc, const char* expression, const char* file, int line) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw device_error(rc, fmt::format("{}:{}: {} failed: {} ({})", file, line, expression,
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
  info.backend = backend::cuda;
  info.ordinal = ordinal;
  fill_common_properties(info, prop);
  info.desc.arch = arch_for(prop.major, prop.minor);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  info.desc.cuda_version = fmt::format("{}.{} (driver {}.{})", runtime / 1000, runtime % 1000 / 10,
                                       driver / 1000, driver % 1000 / 10);
  info.limits.shared_memory_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  info.driver_version = fmt::format("{}.{}", driver / 1000, driver % 1000 / 10);
  // Informational (attn-bench's context): a failure leaves 0 and no pending error.
  int clock_khz = 0, memory_khz = 0;
  const cudaError_t clock_rc = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal);
  const cudaError_t memory_rc = cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, ordinal);
  if (clock_rc != cudaSuccess || memory_rc != cudaSuccess) cudaGetLastError();
  info.clock_mhz = clock_khz / 1000;
  info.memory_clock_mhz = memory_khz / 1000;
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal) == cudaSuccess) info.pci_bus_id = bus_id;
  else cudaGetLastError();
  return info;
}

int64_t free_device_memory() {
  size_t free_bytes = 0, total = 0;
  ATTN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return static_cast<int64_t>(free_bytes);
}

}  // namespace attn
