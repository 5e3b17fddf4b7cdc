#pragma once
// A loaded cubin (cudaLibrary_t) and launches of its kernels, through the runtime API alone.
#include <cuda_runtime_api.h>

#include <string>

namespace attn {

class loaded_module {
 public:
  /// Throws cuda_error when the image does not load (e.g. built for another architecture).
  explicit loaded_module(const std::string& cubin);
  ~loaded_module();
  loaded_module(loaded_module&& o) noexcept;
  loaded_module& operator=(loaded_module&& o) noexcept;
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;

  /// Throws cuda_error naming the symbol when it is missing.
  cudaKernel_t kernel(const char* name) const;

 private:
  cudaLibrary_t m_library = nullptr;
};

/// Raises the kernel's dynamic shared memory limit when it needs more than the default 48 KiB.
void set_dynamic_shared_memory(cudaKernel_t kernel, int bytes, int device);
/// Launches and checks the launch (not the execution: that shows at the next synchronization).
void launch(cudaKernel_t kernel, dim3 grid, dim3 block, int shared_bytes, cudaStream_t stream,
            void** args);

}  // namespace attn
