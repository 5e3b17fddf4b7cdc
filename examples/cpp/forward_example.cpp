// Run one tuned attention forward from a C++ program and check it against a naive reference:
//   attn_tune_example [--table T | --bundle B] [B,H,N,D] [--causal]
// Loads the table (an `attn-tune export`, a results CSV or a bundle), runs attn_tune_forward on
// random bf16 inputs, compares with float64 attention (FlashAttention's rule) on a sample of the
// heads, and times the call with CUDA events (warm, median of 20).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "reference.hpp"

namespace {

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

int main(int argc, char** argv) try {
  attn_tune::context_options options;
  long long b = 4, h = 32, n = 4096, d = 128;
  bool causal = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--table" && i + 1 < argc) options.table = argv[++i];
    else if (a == "--bundle" && i + 1 < argc) options.bundle = argv[++i];
    else if (a == "--causal") causal = true;
    else if (std::sscanf(a.c_str(), "%lld,%lld,%lld,%lld", &b, &h, &n, &d) != 4) {
      std::fprintf(stderr, "usage: %s [--table T | --bundle B] [B,H,N,D] [--causal]\n", argv[0]);
      return 2;
    }
  }
  attn_tune::context ctx(options);
  const attn_tune::problem p = attn_tune::make_problem(b, h, h, n, n, d, ATTN_TUNE_BF16, causal);

  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  const size_t count = static_cast<size_t>(b * h * n * d);
  std::vector<float> q(count), k(count), v(count);
  std::vector<uint16_t> bits(count);
  void *dq, *dk, *dv, *dout, *dlse;
  for (void** ptr : {&dq, &dk, &dv, &dout}) cuda(cudaMalloc(ptr, count * 2), "cudaMalloc");
  cuda(cudaMalloc(&dlse, static_cast<size_t>(b * h * n) * 4), "cudaMalloc");
  for (auto [host, dev] : {std::pair{&q, dq}, std::pair{&k, dk}, std::pair{&v, dv}}) {
    for (size_t i = 0; i < count; ++i) bits[i] = example::to_bits(normal(rng), true);
    for (size_t i = 0; i < count; ++i) (*host)[i] = example::from_bits(bits[i], true);
    cuda(cudaMemcpy(dev, bits.data(), count * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  cudaStream_t stream;
  cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  const attn_tune::choice c = ctx.forward(dq, dk, dv, dout, static_cast<float*>(dlse), p, stream);
  ctx.synchronize(stream);
  const char* sources[] = {"tuned", "bucket", "fallback"};
  std::printf("ran %s %s (%s%s)\n", c.family, c.config, sources[c.source], c.from_bundle ? ", from the bundle" : "");

  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int rep = 0; rep < 23; ++rep) {
    cudaEventRecord(start, stream);
    ctx.forward(dq, dk, dv, dout, static_cast<float*>(dlse), p, stream);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (rep >= 3) ms.push_back(t);  // 3 warm-up calls
  }
  std::sort(ms.begin(), ms.end());
  const double flops = 4.0 * b * h * n * n * d / (causal ? 2 : 1);
  std::printf("time: %.4f ms median of %zu (%.1f TFLOPS)\n", ms[ms.size() / 2], ms.size(),
              flops / ms[ms.size() / 2] / 1e9);

  cuda(cudaMemcpy(bits.data(), dout, count * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const int every = static_cast<int>(std::max<long long>(1, b * h / 4));  // 4 heads: the CPU is slow
  const example::comparison r = example::compare(p, q, k, v, bits, every);
  std::printf("max error %.3e, allowed %.3e: %s\n", r.error, r.allowed, r.error <= r.allowed ? "pass" : "FAIL");
  for (void* ptr : {dq, dk, dv, dout, dlse}) cudaFree(ptr);
  return r.error <= r.allowed ? 0 : 1;
} catch (const attn_tune::error& e) {
  std::fprintf(stderr, "attn_tune: %s (%s)\n", e.what(), attn_tune_status_name(e.status()));
  return 3;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 3;
}
