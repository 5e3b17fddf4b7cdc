#pragma once
// A device runtime for CPU tests of timing: no device is touched.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/runtime.hpp"

namespace attn {

// A runtime whose every timed kernel takes `kernel_ms` (alternating with `kernel_ms * spread` when
// spread != 1, so the noise never drops), counting the timed launches. No device is touched.
class timing_runtime final : public device_runtime {
 public:
  double kernel_ms = 1, spread = 1;
  mutable int timed = 0, launches = 0;
  mutable std::vector<char> memory;

  backend kind() const override { return backend::cuda; }
  int device_count(std::string*) const override { return 1; }
  gpu_info open_device(int) const override { return refuse<gpu_info>(); }
  int64_t free_bytes = int64_t(80) << 30;  ///< what free_memory() answers
  int64_t free_memory() const override { return free_bytes; }
  void* allocate(int64_t bytes) const override { return std::malloc(static_cast<size_t>(bytes)); }
  void release(void* p) const noexcept override { std::free(p); }
  void copy_to_host(void*, const void*, int64_t) const override { refuse<void>(); }
  void copy_to_device(void*, const void*, int64_t) const override { refuse<void>(); }
  void memset(void*, int, int64_t) const override {}
  void memset_async(void*, int, int64_t, stream_t) const override {}
  mutable int copies = 0;
  void copy_on_device_async(void*, const void*, int64_t, stream_t) const override { ++copies; }
  stream_t create_stream() const override { return nullptr; }
  void destroy_stream(stream_t) const noexcept override {}
  void synchronize(stream_t) const override {}
  void synchronize_device() const override {}
  bool finished(stream_t) const override { return true; }
  event_t create_event() const override { return reinterpret_cast<event_t>(++events); }
  void destroy_event(event_t) const noexcept override {}
  void record_event(event_t, stream_t) const override {}
  float elapsed_ms(event_t, event_t) const override {
    ++timed;
    return static_cast<float>(timed % 2 ? kernel_ms : kernel_ms * spread);
  }
  // Modules and kernels are tokens; a launch runs nothing and is counted in `kernel_launches`.
  mutable int kernel_launches = 0;
  module_t load_module(const std::string&) const override { return reinterpret_cast<module_t>(++events); }
  void unload_module(module_t) const noexcept override {}
  kernel_t kernel(module_t, const char*) const override { return reinterpret_cast<kernel_t>(++events); }
  void set_dynamic_shared_memory(kernel_t, int, int) const override {}
  void launch(kernel_t, dims3, dims3, int, stream_t, void**) const override { ++kernel_launches; }
  bool context_lost() const override { return false; }
  bool reset_device(int) const override { return refuse<bool>(); }

 private:
  mutable intptr_t events = 0;
  template <class T>
  static T refuse() {
    throw std::logic_error("the timing runtime does not do this");
  }
};

}  // namespace attn
