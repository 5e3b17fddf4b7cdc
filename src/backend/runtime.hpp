#pragma once
// The device runtime behind one small interface, so that the tuner, verification and timing never
// call a vendor's runtime directly: CUDA (src/backend/cuda/) and HIP (src/backend/hip/). The vendors'
// runtime headers never meet in one translation unit, so handles are opaque pointers here.
#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "backend/tensor_map.hpp"
#include "core/device.hpp"
#include "core/record.hpp"

namespace attn {

/// A failed runtime call: file:line, the call's text, the runtime's message and error name.
struct device_error : std::runtime_error {
  device_error(int c, const std::string& what) : std::runtime_error(what), code(c) {}
  int code;  ///< cudaError_t or hipError_t
};

/// Kernels not finished within the time allowed: a deadlock (a barrier that never completes, a
/// setmaxnreg asking for more registers than the block holds). The host cannot stop a running
/// kernel, so the device stays busy, and anything that waits for it hangs, until the process exits.
struct kernel_hung : std::runtime_error {
  explicit kernel_hung(double waited_s);
  double seconds;  ///< how long the wait lasted
};

struct dims3 {
  unsigned x = 1, y = 1, z = 1;
};

using stream_t = void*;  ///< cudaStream_t / hipStream_t; nullptr is the default stream
using event_t = void*;
using module_t = void*;  ///< cudaLibrary_t / hipModule_t
using kernel_t = void*;  ///< cudaKernel_t / hipFunction_t

/// The device at hand: what it is and what it allows.
struct gpu_info {
  attn::backend backend = backend::cuda;
  int ordinal = 0;
  device_desc desc;  ///< for HIP: sm_count = compute units, cuda_version = "HIP x.y", nvrtc = hiprtc
  resource_limits limits;
  int warp_size = 32;  ///< 64 on AMD CDNA (a wavefront)
  int64_t l2_bytes = 0;
  int64_t total_memory = 0;
  std::string driver_version;  ///< "13.0"
  int clock_mhz = 0, memory_clock_mhz = 0;
  std::string pci_bus_id;  ///< "0000:19:00.0" (CUDA), for finding the same GPU in NVML; may be empty
};

/// Every call that can fail throws device_error; the ones marked noexcept only release.
class device_runtime {
 public:
  virtual ~device_runtime() = default;
  virtual attn::backend kind() const = 0;

  /// Usable devices; 0 (and the reason in *why) when there is none or no driver.
  virtual int device_count(std::string* why) const = 0;
  /// Queries device `ordinal` and makes it current for the calling thread.
  virtual gpu_info open_device(int ordinal) const = 0;
  virtual int64_t free_memory() const = 0;

  virtual void* allocate(int64_t bytes) const = 0;
  virtual void release(void* p) const noexcept = 0;
  virtual void copy_to_host(void* dst, const void* src, int64_t bytes) const = 0;
  virtual void copy_to_device(void* dst, const void* src, int64_t bytes) const = 0;
  virtual void memset(void* p, int value, int64_t bytes) const = 0;
  virtual void memset_async(void* p, int value, int64_t bytes, stream_t s) const = 0;
  /// Device-to-device copy enqueued on the stream (the copy bandwidth, run/copy_bandwidth.hpp).
  virtual void copy_on_device_async(void* dst, const void* src, int64_t bytes, stream_t s) const = 0;

  virtual stream_t create_stream() const = 0;  ///< non-blocking
  virtual void destroy_stream(stream_t s) const noexcept = 0;
  virtual void synchronize(stream_t s) const = 0;
  virtual void synchronize_device() const = 0;
  /// Whether the stream's work is done, without waiting; throws when that work failed.
  virtual bool finished(stream_t s) const = 0;
  /// Waits at most timeout_s for the stream's work: false when it is still running then.
  bool wait(stream_t s, double timeout_s) const;
  /// wait() for kernels that must finish: throws kernel_hung when they have not after timeout_s,
  /// and from then on hung() is true.
  void wait_for_kernels(stream_t s, double timeout_s) const;
  /// Kernels of this process hung: they run until it exits, and freeing memory or unloading a
  /// module would wait for them, so release() and unload_module() do nothing from then on.
  bool hung() const { return m_hung; }
  virtual event_t create_event() const = 0;
  virtual void destroy_event(event_t e) const noexcept = 0;
  virtual void record_event(event_t e, stream_t s) const = 0;
  virtual float elapsed_ms(event_t start, event_t stop) const = 0;  ///< after both completed

  /// Throws when the image does not load (e.g. built for another architecture).
  virtual module_t load_module(const std::string& image) const = 0;
  virtual void unload_module(module_t m) const noexcept = 0;
  /// Throws naming the symbol when it is missing.
  virtual kernel_t kernel(module_t m, const char* name) const = 0;
  /// Raises the kernel's dynamic shared memory limit (CUDA: needed past 48 KiB).
  virtual void set_dynamic_shared_memory(kernel_t k, int bytes, int device) const = 0;
  /// Launches and checks the launch (not the execution: that shows at the next synchronization).
  virtual void launch(kernel_t k, dims3 grid, dims3 block, int shared_bytes, stream_t s,
                      void** args) const = 0;
  /// Launches k as the dependent of the kernel before it on s (CUDA's programmatic dependent
  /// launch; the caller asks for it on sm_90 and up only): k may start as that kernel's blocks end
  /// and must itself wait for its writes (wait_for_prior_grid() in kernels/common/vendor.cuh).
  /// With ATTN_TUNE_NO_PDL=1 set, or a runtime without it, a plain launch.
  virtual void launch_dependent(kernel_t k, dims3 grid, dims3 block, int shared_bytes, stream_t s,
                                void** args) const {
    launch(k, grid, block, shared_bytes, s, args);
  }

  /// Encodes a TMA tensor map (CUDA on Hopper: cuTensorMapEncodeTiled through the driver's entry
  /// point) into the 128 bytes at `out`. Throws device_error; the default has none to encode.
  virtual void encode_tensor_map(const tensor_map_args& a, void* out) const;

  /// After a failure: is the context dead (a sticky error that later work would hit too)?
  virtual bool context_lost() const = 0;
  /// A fresh context on `ordinal`; false when the device cannot be used again in this process.
  virtual bool reset_device(int ordinal) const = 0;

 private:
  mutable std::atomic<bool> m_hung{false};
};

/// The exit status of a process whose variant hung (attn-tune and attn-bench alike).
constexpr int exit_hung = 6;

/// `code`, or, when kernels of this process hung, the end of the process with `code` at once:
/// they run until it exits, and the runtimes' exit handlers, which tear their contexts down,
/// could wait for them. Output is flushed first.
int leave_with(int code);

/// Asks `done` until it says true (then true) or timeout_s has passed (then false), sleeping
/// between asks: 50 us at first, so that a short kernel costs no more than that, growing to 5 ms,
/// so that a long one costs little CPU. What `done` throws goes through.
bool poll_until(const std::function<bool()>& done, double timeout_s);

const device_runtime& cuda_runtime();
/// nullptr in a build without HIP (no libamdhip64-dev).
const device_runtime* hip_runtime();
/// Throws invalid_input for HIP in a build without it.
const device_runtime& runtime_for(backend b);
inline const device_runtime& runtime_of(const gpu_info& gpu) { return runtime_for(gpu.backend); }
/// What --backend auto runs on: HIP when this build has it and it sees a device, else CUDA.
backend detect_backend();

}  // namespace attn
