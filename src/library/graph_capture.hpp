#pragma once
// What the library's forward needs to know about CUDA graph capture. A launch on a capturing
// stream becomes a node of the graph, replayed later on any stream: its split-KV workspace must
// belong to that graph's plan alone, and whatever the first call of a plan does (a cudaMalloc, a
// module load) must be allowed while another stream of the thread captures in global mode.
#include "backend/runtime.hpp"

namespace attn {

/// Whether `stream` is being captured (cudaStreamIsCapturing: no synchronization; an
/// invalidated capture counts as capturing). Throws device_error (e.g. the legacy default stream
/// while another stream captures in global mode).
bool stream_capturing(stream_t stream);

/// RAII: the calling thread's capture mode is cudaStreamCaptureModeRelaxed while it lives, so a
/// cudaMalloc or module load during a capture is not refused (as PyTorch's allocator does it).
class relaxed_capture_mode {
 public:
  relaxed_capture_mode();
  ~relaxed_capture_mode();
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  int m_previous;
};

}  // namespace attn
