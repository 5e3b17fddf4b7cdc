#include "library/graph_capture.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace attn {

bool stream_capturing(stream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: the next call must not see it
    throw device_error(e, fmt::format("cudaStreamIsCapturing: {}", cudaGetErrorString(e)));
  }
  return status != cudaStreamCaptureStatusNone;
}

relaxed_capture_mode::relaxed_capture_mode() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  m_previous = static_cast<int>(mode);
}

relaxed_capture_mode::~relaxed_capture_mode() {
  auto mode = static_cast<cudaStreamCaptureMode>(m_previous);
  cudaThreadExchangeStreamCaptureMode(&mode);
}

}  // namespace attn
