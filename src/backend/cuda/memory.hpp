#pragma once
// Device memory that frees itself: move-only, never throws from its destructor.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "backend/cuda/check.hpp"

namespace attn {

class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(int64_t bytes) : m_bytes(bytes) {
    if (bytes > 0) ATTN_CUDA_CHECK(cudaMalloc(&m_ptr, static_cast<size_t>(bytes)));
  }
  ~device_buffer() {
    if (m_ptr) cudaFree(m_ptr);
  }
  device_buffer(device_buffer&& o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
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
  void* m_ptr = nullptr;
  int64_t m_bytes = 0;
};

}  // namespace attn
