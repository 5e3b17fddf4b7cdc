// Run one tuned attention forward from a C++ program, time it as attn-tune does, and check it
// against a naive reference (attn_tune_example --help for the options):
//   attn_tune_example --table results/mine.csv --shape 2,32,1024,128 --kv-heads 8 --causal
//   attn_tune_example --table results/mine.csv --shape 4,16,2048,128 --seqlens 2048,100,0,700 --layout bshd
// Loads the table (an `attn-tune export`, a results CSV, the tuned-results database or a bundle),
// runs attn_tune_forward on random inputs of the problem (bf16 or fp16, [B,H,N,D] or [B,N,H,D],
// GQA, N_kv != N_q, causal, dv != d, a sliding window, softcap, or a packed variable-length batch:
// [total, H, D] with cu_seqlens), times it with cold L2 (cold_timer.hpp), and compares sampled
// heads and rows with float64 attention under FlashAttention's rule. The last line,
// `result: ...`, holds every number as key=value for scripts (bench/run.py library-bar).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "cold_timer.hpp"
#include "example_options.hpp"
#include "reference.hpp"

namespace {

using example::cuda_check;

// Device memory freed on every path out of main.
struct device_memory {
  std::vector<void*> blocks;
  void* get(size_t bytes) {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
    blocks.push_back(p);
    return p;
  }
  ~device_memory() {
    for (void* p : blocks) cudaFree(p);
  }
};

// Fills `host` with standard-normal values rounded to the dtype, and `device` with their bits.
void random_tensor(std::vector<float>& host, void* device, bool bf16, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<uint16_t> bits(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    bits[i] = example::to_bits(normal(rng), bf16);
    host[i] = example::from_bits(bits[i], bf16);
  }
  cuda_check(cudaMemcpy(device, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
}

// A packed batch's offsets as the API takes them: int32 [B + 1] on the device.
const int32_t* upload_offsets(const std::vector<int64_t>& cu, device_memory& memory) {
  const std::vector<int32_t> cu32(cu.begin(), cu.end());  // example_options checked that the total fits
  void* d = memory.get(cu32.size() * 4);
  cuda_check(cudaMemcpy(d, cu32.data(), cu32.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  return static_cast<const int32_t*>(d);
}

}  // namespace

int main(int argc, char** argv) try {
  const example::example_options o = example::parse_example_options(argc, argv);
  if (o.help) {
    std::fputs(example::usage_text, stdout);
    return 0;
  }
  attn_tune::problem p =
      attn_tune::make_problem(o.batch, o.heads, o.kv_heads, o.q_len, o.kv_len, o.head_dim,
                              static_cast<attn_tune_dtype>(o.dtype), o.causal, static_cast<attn_tune_layout>(o.layout));
  if (o.head_dim_v != o.head_dim) p.head_dim_v = o.head_dim_v;  // V and O contiguous with rows of dv
  if (o.window_left >= 0 || o.window_right >= 0) p.window = 1, p.window_left = o.window_left, p.window_right = o.window_right;
  p.softcap = o.softcap;
  // A packed batch: sequence b's rows are [cu_q[b], cu_q[b + 1]) of Q and O and [cu_k[b], cu_k[b + 1]) of
  // K and V; Q and O hold total_q rows of every head, K and V total_k ([total, H, D] in bshd).
  example::packed_batch packed;
  if (!o.seqlens.empty()) packed = {example::cumulative(o.seqlens), example::cumulative(o.kv_seqlens)};
  const int64_t q_rows = packed.cu_q.empty() ? o.batch * o.q_len : packed.cu_q.back();
  const int64_t kv_rows = packed.cu_k.empty() ? o.batch * o.kv_len : packed.cu_k.back();
  const bool bf16 = o.dtype == ATTN_TUNE_BF16;
  const size_t q_count = static_cast<size_t>(q_rows * o.heads * o.head_dim);
  const size_t o_count = static_cast<size_t>(q_rows * o.heads * o.head_dim_v);
  const size_t kv_count = static_cast<size_t>(kv_rows * o.kv_heads * o.head_dim);
  const size_t v_count = static_cast<size_t>(kv_rows * o.kv_heads * o.head_dim_v);
  std::printf("problem: B%lld H%lld kv_heads %lld N_q %lld N_kv %lld D%lld%s %s %s%s", static_cast<long long>(o.batch),
              static_cast<long long>(o.heads), static_cast<long long>(o.kv_heads), static_cast<long long>(o.q_len),
              static_cast<long long>(o.kv_len), static_cast<long long>(o.head_dim),
              o.head_dim_v != o.head_dim ? (" dv" + std::to_string(o.head_dim_v)).c_str() : "",
              bf16 ? "bf16" : "fp16", o.layout == ATTN_TUNE_BSHD ? "bshd" : "bhsd", o.causal ? " causal" : "");
  if (p.window) std::printf(" window %lld,%lld", static_cast<long long>(p.window_left), static_cast<long long>(p.window_right));
  if (p.softcap > 0) std::printf(" softcap %g", p.softcap);
  if (!packed.cu_q.empty())
    std::printf(" packed: total_q %lld total_k %lld", static_cast<long long>(q_rows), static_cast<long long>(kv_rows));
  std::printf("\n");

  attn_tune::context ctx(o.context);
  device_memory memory;
  void* dq = memory.get(q_count * 2);
  void* dk = memory.get(kv_count * 2);
  void* dv = memory.get(v_count * 2);
  void* dout = memory.get(o_count * 2);
  float* dlse = static_cast<float*>(memory.get(static_cast<size_t>(q_rows * o.heads) * 4));  // [B,H,N] or [H,total_q]
  if (!packed.cu_q.empty()) {
    // cu_seqlens int32 [B + 1] on the GPU; self-attention passes the queries' offsets for the keys too.
    p.cu_seqlens_q = upload_offsets(packed.cu_q, memory);
    p.cu_seqlens_k = o.kv_seqlens == o.seqlens ? p.cu_seqlens_q : upload_offsets(packed.cu_k, memory);
    p.total_q = q_rows, p.total_k = kv_rows;
  }
  std::vector<float> q(q_count), k(kv_count), v(v_count);
  std::mt19937 rng(o.seed);
  random_tensor(q, dq, bf16, rng);
  random_tensor(k, dk, bf16, rng);
  random_tensor(v, dv, bf16, rng);

  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const attn_tune::choice c = ctx.forward(dq, dk, dv, dout, dlse, p, stream);  // compiles or loads it once
  ctx.synchronize(stream);
  const char* sources[] = {"tuned", "bucket", "fallback"};
  const char* source = c.source >= 0 && c.source < 3 ? sources[c.source] : "?";
  std::printf("config: %s %s (%s%s)\n", c.family, c.config, source, c.from_bundle ? ", from the bundle" : "");

  const example::timing t =
      example::time_cold([&](cudaStream_t s) { ctx.forward(dq, dk, dv, dout, dlse, p, s); }, stream);
  // 2 d per (query, key) pair for Q K^T and 2 dv for P V, each sequence's own pairs, halved when causal
  // (a window's visible pairs exactly): attn-tune's rule.
  const double flops = example::attention_flops(p, packed);
  std::printf("time: %.4f ms median of %d reps (IQR %.4f ms, noise %.2f%%), L2 flushed before each (%.1f MiB); "
              "%.1f TFLOPS\n",
              t.median_ms, t.reps, t.iqr_ms, 100 * t.noise, t.flushed_bytes / (1 << 20), flops / t.median_ms / 1e9);

  bool pass = true;
  example::comparison r;
  if (o.check) {
    // Rerun on poisoned outputs (0xFFFF: NaN in bf16 and fp16, so a row never written fails, even
    // one that must be 0); the reference checks K heads and up to 256 rows of each.
    cuda_check(cudaMemset(dout, 0xFF, o_count * 2), "cudaMemset");
    ctx.forward(dq, dk, dv, dout, dlse, p, stream);
    ctx.synchronize(stream);
    std::vector<uint16_t> out(o_count);
    cuda_check(cudaMemcpy(out.data(), dout, o_count * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const int every = static_cast<int>(std::max<int64_t>(1, o.batch * o.heads / o.check_heads));
    const int row_every = static_cast<int>(std::max<int64_t>(1, o.q_len / 256));
    r = example::compare(p, q, k, v, out, every, row_every, packed);  // each sequence alone
    pass = r.error <= r.allowed;
    std::printf("check: max error %.3e, allowed %.3e (float64 reference, every %d-th head, every %d-th row%s): %s\n",
                r.error, r.allowed, every, row_every, packed.cu_q.empty() ? "" : " of each sequence",
                pass ? "pass" : "FAIL");
  }
  cudaStreamDestroy(stream);
  std::printf("result: family=%s config=%s source=%s median_ms=%.6f reps=%d error=%.3e allowed=%.3e check=%s\n",
              c.family, c.config, source, t.median_ms, t.reps, r.error, r.allowed,
              !o.check ? "skipped" : pass ? "pass" : "FAIL");
  return pass ? 0 : 1;
} catch (const example::usage_error& e) {
  std::fprintf(stderr, "error: %s\n%s", e.what(), example::usage_text);
  return 2;
} catch (const attn_tune::error& e) {
  std::fprintf(stderr, "attn_tune: %s (%s)\n", e.what(), attn_tune_status_name(e.status()));
  return e.status() == ATTN_TUNE_ERROR_INVALID_ARGUMENT ? 2 : 3;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 3;
}
