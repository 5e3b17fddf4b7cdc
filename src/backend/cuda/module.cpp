#include "backend/cuda/module.hpp"

#include <utility>

#include <fmt/format.h>

#include "backend/cuda/check.hpp"

namespace attn {

loaded_module::loaded_module(const std::string& cubin) {
  ATTN_CUDA_CHECK(cudaLibraryLoadData(&m_library, cubin.data(), nullptr, nullptr, 0, nullptr,
                                      nullptr, 0));
}

loaded_module::~loaded_module() {
  if (m_library) cudaLibraryUnload(m_library);
}

loaded_module::loaded_module(loaded_module&& o) noexcept
    : m_library(std::exchange(o.m_library, nullptr)) {}

loaded_module& loaded_module::operator=(loaded_module&& o) noexcept {
  std::swap(m_library, o.m_library);
  return *this;
}

cudaKernel_t loaded_module::kernel(const char* name) const {
  cudaKernel_t k = nullptr;
  const cudaError_t rc = cudaLibraryGetKernel(&k, m_library, name);
  if (rc != cudaSuccess) cuda_check(rc, fmt::format("cudaLibraryGetKernel({})", name).c_str(), __FILE__, __LINE__);
  return k;
}

void set_dynamic_shared_memory(cudaKernel_t kernel, int bytes, int device) {
  ATTN_CUDA_CHECK(cudaKernelSetAttributeForDevice(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes, device));
}

void launch(cudaKernel_t kernel, dim3 grid, dim3 block, int shared_bytes, cudaStream_t stream,
            void** args) {
  ATTN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args,
                                   static_cast<size_t>(shared_bytes), stream));
  ATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace attn
