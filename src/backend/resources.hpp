#pragma once
// Device resources that free themselves, on any runtime: memory, a loaded module, a stream.
// Move-only; destructors never throw.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/runtime.hpp"

namespace attn {

class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(const device_runtime& rt, int64_t bytes) : m_rt(&rt), m_bytes(bytes) {
    if (bytes > 0) m_ptr = rt.allocate(bytes);
  }
  ~device_buffer() {
    if (m_ptr) m_rt->release(m_ptr);
  }
  device_buffer(device_buffer&& o) noexcept
      : m_rt(o.m_rt), m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(m_rt, o.m_rt);
    std::swap(m_ptr, o.m_ptr);
    std::swap(m_bytes, o.m_bytes);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return m_ptr; }
  template <class T>
  T* as() const { return static_cast<T*>(m_ptr); }
  int64_t bytes() const { return m_bytes; }

 private:
  const device_runtime* m_rt = nullptr;
  void* m_ptr = nullptr;
  int64_t m_bytes = 0;
};

/// The whole of b, copied to the host as T.
template <class T>
std::vector<T> to_host(const device_runtime& rt, const device_buffer& b) {
  std::vector<T> out(static_cast<size_t>(b.bytes()) / sizeof(T));
  rt.copy_to_host(out.data(), b.get(), static_cast<int64_t>(out.size() * sizeof(T)));
  return out;
}

/// A loaded cubin / code object and the lookup of its kernels.
class loaded_module {
 public:
  loaded_module(const device_runtime& rt, const std::string& image)
      : m_rt(&rt), m_module(rt.load_module(image)) {}
  ~loaded_module() {
    if (m_module) m_rt->unload_module(m_module);
  }
  loaded_module(loaded_module&& o) noexcept : m_rt(o.m_rt), m_module(std::exchange(o.m_module, nullptr)) {}
  loaded_module& operator=(loaded_module&& o) noexcept {
    std::swap(m_rt, o.m_rt);
    std::swap(m_module, o.m_module);
    return *this;
  }
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;

  kernel_t kernel(const char* name) const { return m_rt->kernel(m_module, name); }

 private:
  const device_runtime* m_rt;
  module_t m_module;
};

/// A non-blocking stream.
class device_stream {
 public:
  explicit device_stream(const device_runtime& rt) : m_rt(&rt), m_stream(rt.create_stream()) {}
  ~device_stream() {
    if (m_stream) m_rt->destroy_stream(m_stream);
  }
  device_stream(device_stream&& o) noexcept : m_rt(o.m_rt), m_stream(std::exchange(o.m_stream, nullptr)) {}
  device_stream& operator=(device_stream&&) = delete;
  device_stream(const device_stream&) = delete;
  device_stream& operator=(const device_stream&) = delete;

  stream_t get() const { return m_stream; }

 private:
  const device_runtime* m_rt;
  stream_t m_stream;
};

}  // namespace attn
