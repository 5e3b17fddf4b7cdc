// Timing a call the way `attn-tune` times a variant (src/run/timer.cpp), so the two numbers
// compare: 3 warm-up calls, then batches of up to 10 repetitions, each one a write of twice the
// L2 size (cold cache), a CUDA event, the call, an event; repetitions stop once the median is
// known to 1% (the half-width of its 95% confidence interval from order statistics), or the timed
// calls add up to 250 ms, never before 20 nor after 300. The example builds against the installed
// library alone, so the rule is restated here rather than taken from the tool's sources.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace example {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct timing_rule {
  int warmup = 3, min_reps = 20, max_reps = 300;
  double max_total_ms = 250, max_noise = 0.01;
};

struct timing {
  double median_ms = 0, iqr_ms = 0, noise = 0;
  int reps = 0;
  double flushed_bytes = 0;
};

/// sorted[k - 1] for the 1-based rank k.
inline double at_rank(const std::vector<double>& sorted, int k) {
  return sorted[static_cast<size_t>(std::clamp(k, 1, static_cast<int>(sorted.size())) - 1)];
}

/// Linear interpolation between order statistics, as the tool's median and IQR.
inline double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t lower = static_cast<size_t>(position), upper = std::min(lower + 1, sorted.size() - 1);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - static_cast<double>(lower));
}
inline double median_of(const std::vector<double>& sorted) { return quantile(sorted, 0.5); }

/// The median's 95% confidence half-width over the median: ranks n/2 -+ 1.96 sqrt(n)/2 (+1 above).
inline double median_noise(const std::vector<double>& sorted) {
  const int n = static_cast<int>(sorted.size());
  const double median = median_of(sorted);
  if (n < 6 || median == 0) return n < 6 ? INFINITY : 0;
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2;
  return (at_rank(sorted, static_cast<int>(std::lround(n / 2.0 + half + 1))) -
          at_rank(sorted, static_cast<int>(std::lround(n / 2.0 - half)))) / 2 / median;
}

/// Times `call` (which enqueues its kernels on `stream`) on the current device.
inline timing time_cold(const std::function<void(cudaStream_t)>& call, cudaStream_t stream, const timing_rule& rule = {}) {
  int device = 0, l2_bytes = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  const size_t flush_bytes = 2 * static_cast<size_t>(std::max(l2_bytes, 1 << 20));
  void* flush = nullptr;
  cuda_check(cudaMalloc(&flush, flush_bytes), "cudaMalloc (the L2 flush buffer)");
  std::vector<cudaEvent_t> events(20);
  for (auto& e : events) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  std::vector<double> samples;
  double total = 0;
  try {
    for (int i = 0; i < rule.warmup; ++i) call(stream);
    cuda_check(cudaStreamSynchronize(stream), "the warm-up calls");
    for (int round = 0;; ++round) {
      const int n = static_cast<int>(samples.size());
      if (n >= rule.max_reps) break;
      if (n >= rule.min_reps) {
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        if (total >= rule.max_total_ms || median_noise(sorted) <= rule.max_noise) break;
      }
      const int batch = std::min({n < rule.min_reps ? std::min(10, rule.min_reps - n) : 5, rule.max_reps - n, 10});
      for (int i = 0; i < batch; ++i) {
        cuda_check(cudaMemsetAsync(flush, (round * 10 + i) & 0xff, flush_bytes, stream), "cudaMemsetAsync");
        cuda_check(cudaEventRecord(events[2 * i], stream), "cudaEventRecord");
        call(stream);
        cuda_check(cudaEventRecord(events[2 * i + 1], stream), "cudaEventRecord");
      }
      cuda_check(cudaStreamSynchronize(stream), "the timed calls");
      for (int i = 0; i < batch; ++i) {
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
        samples.push_back(ms);
        total += ms;
      }
    }
  } catch (...) {
    for (auto e : events) cudaEventDestroy(e);
    cudaFree(flush);
    throw;
  }
  for (auto e : events) cudaEventDestroy(e);
  cudaFree(flush);
  std::sort(samples.begin(), samples.end());
  const int n = static_cast<int>(samples.size());
  timing t;
  t.median_ms = median_of(samples);
  t.iqr_ms = quantile(samples, 0.75) - quantile(samples, 0.25);
  t.noise = median_noise(samples);
  t.reps = n;
  t.flushed_bytes = static_cast<double>(flush_bytes);
  return t;
}

}  // namespace example
