// device_runtime on the CUDA runtime API alone (no libcuda): cubins load as cudaLibrary_t.
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "backend/cuda/check.hpp"
#include "backend/cuda/device.hpp"
#include "backend/cuda/tensor_map_encode.hpp"

namespace attn {

namespace {

dim3 to_dim3(dims3 d) { return dim3(d.x, d.y, d.z); }
cudaStream_t cuda_stream(stream_t s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t cuda_event(event_t e) { return static_cast<cudaEvent_t>(e); }

class cuda_device_runtime final : public device_runtime {
 public:
  backend kind() const override { return backend::cuda; }
  int device_count(std::string* why) const override { return cuda_device_count(why); }
  gpu_info open_device(int ordinal) const override { return open_cuda_device(ordinal); }
  int64_t free_memory() const override { return free_device_memory(); }

  void* allocate(int64_t bytes) const override {
    void* p = nullptr;
    ATTN_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(bytes)));
    return p;
  }
  void release(void* p) const noexcept override {
    if (!hung()) cudaFree(p);  // cudaFree waits for the device
  }
  void copy_to_host(void* dst, const void* src, int64_t bytes) const override {
    ATTN_CUDA_CHECK(cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost));
  }
  void copy_to_device(void* dst, const void* src, int64_t bytes) const override {
    ATTN_CUDA_CHECK(cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice));
  }
  void memset(void* p, int value, int64_t bytes) const override {
    ATTN_CUDA_CHECK(cudaMemset(p, value, static_cast<size_t>(bytes)));
  }
  void memset_async(void* p, int value, int64_t bytes, stream_t s) const override {
    ATTN_CUDA_CHECK(cudaMemsetAsync(p, value, static_cast<size_t>(bytes), cuda_stream(s)));
  }
  void copy_on_device_async(void* dst, const void* src, int64_t bytes, stream_t s) const override {
    ATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, cuda_stream(s)));
  }

  stream_t create_stream() const override {
    cudaStream_t s = nullptr;
    ATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void destroy_stream(stream_t s) const noexcept override { cudaStreamDestroy(cuda_stream(s)); }
  void synchronize(stream_t s) const override { ATTN_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(s))); }
  void synchronize_device() const override { ATTN_CUDA_CHECK(cudaDeviceSynchronize()); }
  bool finished(stream_t s) const override {
    const cudaError_t rc = cudaStreamQuery(cuda_stream(s));
    if (rc != cudaErrorNotReady) {
      ATTN_CUDA_CHECK(rc);
      return true;
    }
    cudaGetLastError();  // "not ready" is no failure: the next launch's check must not see it
    return false;
  }
  event_t create_event() const override {
    cudaEvent_t e = nullptr;
    ATTN_CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
  void destroy_event(event_t e) const noexcept override { cudaEventDestroy(cuda_event(e)); }
  void record_event(event_t e, stream_t s) const override {
    ATTN_CUDA_CHECK(cudaEventRecord(cuda_event(e), cuda_stream(s)));
  }
  float elapsed_ms(event_t start, event_t stop) const override {
    float ms = 0;
    ATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, cuda_event(start), cuda_event(stop)));
    return ms;
  }

  module_t load_module(const std::string& image) const override {
    cudaLibrary_t library = nullptr;
    ATTN_CUDA_CHECK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    return library;
  }
  void unload_module(module_t m) const noexcept override {
    if (!hung()) cudaLibraryUnload(static_cast<cudaLibrary_t>(m));
  }
  kernel_t kernel(module_t m, const char* name) const override {
    cudaKernel_t k = nullptr;
    const cudaError_t rc = cudaLibraryGetKernel(&k, static_cast<cudaLibrary_t>(m), name);
    if (rc != cudaSuccess) cuda_check(rc, fmt::format("cudaLibraryGetKernel({})", name).c_str(), __FILE__, __LINE__);
    return k;
  }
  void set_dynamic_shared_memory(kernel_t k, int bytes, int device) const override {
    ATTN_CUDA_CHECK(cudaKernelSetAttributeForDevice(static_cast<cudaKernel_t>(k),
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes, device));
  }
  void launch(kernel_t k, dims3 grid, dims3 block, int shared_bytes, stream_t s, void** args) const override {
    ATTN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k), to_dim3(grid), to_dim3(block), args,
                                     static_cast<size_t>(shared_bytes), cuda_stream(s)));
    ATTN_CUDA_CHECK(cudaGetLastError());
  }

  void launch_dependent(kernel_t k, dims3 grid, dims3 block, int shared_bytes, stream_t s,
                        void** args) const override {
    static const bool disabled = [] {
      const char* v = std::getenv("ATTN_TUNE_NO_PDL");
      return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
    }();
    if (disabled) return launch(k, grid, block, shared_bytes, s, args);
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = to_dim3(grid);
    config.blockDim = to_dim3(block);
    config.dynamicSmemBytes = static_cast<size_t>(shared_bytes);
    config.stream = cuda_stream(s);
    config.attrs = &attribute;
    config.numAttrs = 1;
    ATTN_CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k), args));
    ATTN_CUDA_CHECK(cudaGetLastError());
  }

  // Sticky errors (illegal address, ...) survive cudaGetLastError; later work fails too.
  void encode_tensor_map(const tensor_map_args& a, void* out) const override { encode_cuda_tensor_map(a, out); }

  bool context_lost() const override { return cudaDeviceSynchronize() != cudaSuccess; }

  // After a sticky error: a new primary context. The driver may need a moment to recover the
  // device, so the first use is retried for up to ~5 s.
  bool reset_device(int ordinal) const override {
    cudaDeviceReset();
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (cudaSetDevice(ordinal) == cudaSuccess && cudaFree(nullptr) == cudaSuccess) return true;
      cudaGetLastError();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      cudaDeviceReset();
    }
    return false;
  }
};

}  // namespace

const device_runtime& cuda_runtime() {
  static const cuda_device_runtime runtime;
  return runtime;
}

}  // namespace attn
