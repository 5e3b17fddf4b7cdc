// device_runtime on the HIP runtime (AMD GPUs): code objects from hiprtc load as hipModule_t.
// Compiled only when the HIP headers and libamdhip64 are found (ATTN_TUNE_HAVE_HIP).
// COMPILE-VERIFIED ONLY: no AMD GPU has run this code yet.
#include <hip/hip_runtime_api.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "backend/device_properties.hpp"

namespace attn {

namespace {

void hip_check(hipError_t rc, const char* expression, const char* file, int line) {
  if (rc == hipSuccess) return;
  (void)hipGetLastError();  // clear a non-sticky error so the next call starts clean
  throw device_error(rc, fmt::format("{}:{}: {} failed: {} ({})", file, line, expression, hipGetErrorString(rc),
                                     hipGetErrorName(rc)));
}

#define ATTN_HIP_CHECK(call) hip_check((call), #call, __FILE__, __LINE__)

hipStream_t hip_stream(stream_t s) { return static_cast<hipStream_t>(s); }
hipEvent_t hip_event(event_t e) { return static_cast<hipEvent_t>(e); }

// "gfx90a" from "gfx90a:sramecc+:xnack-": hiprtc's --offload-arch takes the processor alone.
std::string gfx_arch(const char* gcn_arch_name) {
  const std::string full = gcn_arch_name;
  return full.substr(0, full.find(':'));
}

std::string version_text(int v) {  // HIP_VERSION style: major * 10^7 + minor * 10^5 + patch
  return fmt::format("{}.{}", v / 10000000, v / 100000 % 100);
}

gpu_info open_hip_device(int ordinal) {
  ATTN_HIP_CHECK(hipSetDevice(ordinal));
  hipDeviceProp_t prop{};
  ATTN_HIP_CHECK(hipGetDeviceProperties(&prop, ordinal));
  gpu_info info;
  info.backend = backend::hip;
  info.ordinal = ordinal;
  fill_common_properties(info, prop);
  info.desc.arch = gfx_arch(prop.gcnArchName);
  int runtime = 0, driver = 0;  // informational: 0.0 when unknown
  if (hipRuntimeGetVersion(&runtime) != hipSuccess) runtime = 0;
  if (hipDriverGetVersion(&driver) != hipSuccess) driver = 0;
  info.desc.cuda_version = fmt::format("HIP {} (driver {})", version_text(runtime), version_text(driver));
  info.limits.shared_memory_per_block = static_cast<int64_t>(prop.sharedMemPerBlock);  // LDS, 64 KiB
  info.driver_version = version_text(driver);
  info.clock_mhz = prop.clockRate / 1000;
  info.memory_clock_mhz = prop.memoryClockRate / 1000;
  (void)hipGetLastError();  // nothing pending from the informational queries
  return info;
}

class hip_device_runtime final : public device_runtime {
 public:
  backend kind() const override { return backend::hip; }
  int device_count(std::string* why) const override {
    int count = 0;
    const hipError_t rc = hipGetDeviceCount(&count);
    if (rc != hipSuccess || count == 0) {
      if (why) *why = rc == hipSuccess || rc == hipErrorNoDevice ? "no AMD GPU found (hipErrorNoDevice)"
                                                                  : fmt::format("{} ({})", hipGetErrorString(rc),
                                                                                hipGetErrorName(rc));
      (void)hipGetLastError();
      return 0;
    }
    return count;
  }
  gpu_info open_device(int ordinal) const override { return open_hip_device(ordinal); }
  int64_t free_memory() const override {
    size_t free_bytes = 0, total = 0;
    ATTN_HIP_CHECK(hipMemGetInfo(&free_bytes, &total));
    return static_cast<int64_t>(free_bytes);
  }

  void* allocate(int64_t bytes) const override {
    void* p = nullptr;
    ATTN_HIP_CHECK(hipMalloc(&p, static_cast<size_t>(bytes)));
    return p;
  }
  void release(void* p) const noexcept override {
    if (!hung()) (void)hipFree(p);  // hipFree waits for the device
  }
  void copy_to_host(void* dst, const void* src, int64_t bytes) const override {
    ATTN_HIP_CHECK(hipMemcpy(dst, src, static_cast<size_t>(bytes), hipMemcpyDeviceToHost));
  }
  void copy_to_device(void* dst, const void* src, int64_t bytes) const override {
    ATTN_HIP_CHECK(hipMemcpy(dst, src, static_cast<size_t>(bytes), hipMemcpyHostToDevice));
  }
  void memset(void* p, int value, int64_t bytes) const override {
    ATTN_HIP_CHECK(hipMemset(p, value, static_cast<size_t>(bytes)));
  }
  void memset_async(void* p, int value, int64_t bytes, stream_t s) const override {
    ATTN_HIP_CHECK(hipMemsetAsync(p, value, static_cast<size_t>(bytes), hip_stream(s)));
  }
  void copy_on_device_async(void* dst, const void* src, int64_t bytes, stream_t s) const override {
    ATTN_HIP_CHECK(hipMemcpyAsync(dst, src, static_cast<size_t>(bytes), hipMemcpyDeviceToDevice, hip_stream(s)));
  }

  stream_t create_stream() const override {
    hipStream_t s = nullptr;
    ATTN_HIP_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    return s;
  }
  void destroy_stream(stream_t s) const noexcept override { (void)hipStreamDestroy(hip_stream(s)); }
  void synchronize(stream_t s) const override { ATTN_HIP_CHECK(hipStreamSynchronize(hip_stream(s))); }
  void synchronize_device() const override { ATTN_HIP_CHECK(hipDeviceSynchronize()); }
  bool finished(stream_t s) const override {
    const hipError_t rc = hipStreamQuery(hip_stream(s));
    if (rc != hipErrorNotReady) {
      ATTN_HIP_CHECK(rc);
      return true;
    }
    (void)hipGetLastError();  // "not ready" is no failure: nothing later may report it as one
    return false;
  }
  event_t create_event() const override {
    hipEvent_t e = nullptr;
    ATTN_HIP_CHECK(hipEventCreate(&e));
    return e;
  }
  void destroy_event(event_t e) const noexcept override { (void)hipEventDestroy(hip_event(e)); }
  void record_event(event_t e, stream_t s) const override {
    ATTN_HIP_CHECK(hipEventRecord(hip_event(e), hip_stream(s)));
  }
  float elapsed_ms(event_t start, event_t stop) const override {
    float ms = 0;
    ATTN_HIP_CHECK(hipEventElapsedTime(&ms, hip_event(start), hip_event(stop)));
    return ms;
  }

  module_t load_module(const std::string& image) const override {
    hipModule_t module = nullptr;
    ATTN_HIP_CHECK(hipModuleLoadData(&module, image.data()));
    return module;
  }
  void unload_module(module_t m) const noexcept override {
    if (!hung()) (void)hipModuleUnload(static_cast<hipModule_t>(m));
  }
  kernel_t kernel(module_t m, const char* name) const override {
    hipFunction_t f = nullptr;
    const hipError_t rc = hipModuleGetFunction(&f, static_cast<hipModule_t>(m), name);
    if (rc != hipSuccess) hip_check(rc, fmt::format("hipModuleGetFunction({})", name).c_str(), __FILE__, __LINE__);
    return f;
  }
  // AMD has no opt-in: a workgroup may use all of the LDS (64 KiB on CDNA), and a launch that
  // asks for more fails and says so.
  void set_dynamic_shared_memory(kernel_t, int, int) const override {}
  void launch(kernel_t k, dims3 grid, dims3 block, int shared_bytes, stream_t s, void** args) const override {
    ATTN_HIP_CHECK(hipModuleLaunchKernel(static_cast<hipFunction_t>(k), grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z, static_cast<unsigned>(shared_bytes), hip_stream(s), args, nullptr));
    // hipModuleLaunchKernel's own status is the launch's; a hipGetLastError here could report an
    // older, deliberately ignored error (a release in a destructor) as this launch's failure.
  }

  // A memory fault or trap leaves the device unusable; later work fails too. (By default the ROCm
  // runtime may instead abort the whole process on a GPU fault: then no recovery in-process helps.)
  bool context_lost() const override { return hipDeviceSynchronize() != hipSuccess; }

  bool reset_device(int ordinal) const override {
    (void)hipDeviceReset();
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (hipSetDevice(ordinal) == hipSuccess && hipFree(nullptr) == hipSuccess) return true;
      (void)hipGetLastError();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      (void)hipDeviceReset();
    }
    return false;
  }
};

}  // namespace

const device_runtime* hip_runtime() {
  static const hip_device_runtime runtime;
  return &runtime;
}

}  // namespace attn
