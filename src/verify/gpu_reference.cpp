#include "verify/gpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "backend/cuda/device.hpp"

namespace attn {

namespace {

constexpr int error_blocks = 1024;

dim3 blocks_for(int64_t n) {
  return dim3(static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 4096)));
}

}  // namespace

std::string support_source() { return "#include \"reference.cuh\"\n"; }

std::vector<std::string> support_options(dtype t) {
  return {"-DATTN_SUPPORT_MODULE", fmt::format("-DATTN_BF16={}", t == dtype::bf16 ? 1 : 0)};
}

std::unique_ptr<support_kernels> load_support(const compile_cache& cache, dtype t,
                                              const std::string& arch) {
  auto compiled = compile_with_cache(cache, support_source(), arch, support_options(t));
  if (!compiled.result.ok)
    throw std::runtime_error("the support module (kernels/reference.cuh) does not compile:\n" +
                             compiled.result.log);
  auto s = std::make_unique<support_kernels>(compiled.result.cubin);
  s->scores_full = s->module.kernel("ref_scores_full");
  s->scores_lowp = s->module.kernel("ref_scores_lowp");
  s->softmax_full = s->module.kernel("ref_softmax_full");
  s->softmax_lowp = s->module.kernel("ref_softmax_lowp");
  s->pv_full = s->module.kernel("ref_pv_full");
  s->pv_lowp = s->module.kernel("ref_pv_lowp");
  s->fill_normal = s->module.kernel("fill_normal");
  s->poison = s->module.kernel("poison");
  s->error_elem = s->module.kernel("error_elem");
  s->error_f32 = s->module.kernel("error_f32");
  return s;
}

problem::problem(const shape& s, const support_kernels& support, uint64_t seed) : shp(s) {
  q = device_buffer(q_bytes(s));
  k = device_buffer(kv_bytes(s));
  v = device_buffer(kv_bytes(s));
  o = device_buffer(q_bytes(s));
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  const int64_t before = free_device_memory();
  lse = device_buffer(lse_bytes(s));
  lse_measured_bytes = before - free_device_memory();
  // Distinct seeds per tensor: Q, K and V must not be equal.
  const std::pair<device_buffer*, int64_t> inputs[] = {{&q, q_elements()}, {&k, kv_elements()},
                                                       {&v, kv_elements()}};
  uint64_t stream_seed = seed;
  for (auto& [buffer, n] : inputs) {
    void* ptr = buffer->get();
    long long count = n;
    unsigned long long sd = stream_seed++;
    void* args[] = {&ptr, &count, &sd};
    launch(support.fill_normal, blocks_for(n), dim3(256), 0, nullptr, args);
  }
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
}

int64_t problem::q_elements() const { return shp.batch * shp.heads * shp.q_len * shp.head_dim; }
int64_t problem::kv_elements() const {
  return shp.batch * shp.kv_heads * shp.kv_len * shp.head_dim;
}

attn_k::fwd_params problem::params() const {
  attn_k::fwd_params p{};
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  p.o = o.get();
  p.lse = lse.as<float>();
  const int64_t d = shp.head_dim;
  if (shp.layout == layout::bhsd) {
    p.q_batch_stride = shp.heads * shp.q_len * d;
    p.q_head_stride = shp.q_len * d;
    p.q_row_stride = d;
    p.kv_batch_stride = shp.kv_heads * shp.kv_len * d;
    p.kv_head_stride = shp.kv_len * d;
    p.kv_row_stride = d;
  } else {
    p.q_batch_stride = shp.q_len * shp.heads * d;
    p.q_head_stride = d;
    p.q_row_stride = shp.heads * d;
    p.kv_batch_stride = shp.kv_len * shp.kv_heads * d;
    p.kv_head_stride = d;
    p.kv_row_stride = shp.kv_heads * d;
  }
  p.q_len = static_cast<int>(shp.q_len);
  p.kv_len = static_cast<int>(shp.kv_len);
  p.heads = static_cast<int>(shp.heads);
  p.group = static_cast<int>(shp.heads / shp.kv_heads);
  p.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  p.scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)) * M_LOG2E);
  return p;
}

namespace {

int64_t pairs_per_chunk(const shape& s, int64_t chunk_bytes) {
  const int64_t per_pair = s.q_len * s.kv_len * 8;  // fp32 scores + fp32 probabilities
  return std::clamp<int64_t>(chunk_bytes / per_pair, 1, std::min<int64_t>(s.batch * s.heads, 65535));
}

// One materializing pass over pairs [bh0, bh0 + n): scores, softmax, P V.
void naive_pass(const support_kernels& sk, const problem& pr, bool lowp, int bh0, int n,
                float* scores, void* probs, float* lse, void* out) {
  attn_k::fwd_params p = pr.params();
  int d = static_cast<int>(pr.shp.head_dim), causal = pr.shp.causal ? 1 : 0;
  const dim3 tile(16, 16);
  {
    void* args[] = {&p, &bh0, &d, &causal, &scores};
    launch(lowp ? sk.scores_lowp : sk.scores_full,
           dim3((p.kv_len + 15) / 16, (p.q_len + 15) / 16, n), tile, 0, nullptr, args);
  }
  {
    const float* s = scores;
    void* args[] = {&p, &bh0, &s, &probs, &lse};
    launch(lowp ? sk.softmax_lowp : sk.softmax_full, dim3(p.q_len, 1, n), dim3(256), 0, nullptr,
           args);
  }
  {
    const void* pp = probs;
    void* args[] = {&p, &bh0, &pp, &out};
    launch(lowp ? sk.pv_lowp : sk.pv_full, dim3(d / 16, (p.q_len + 15) / 16, n), tile, 0, nullptr,
           args);
  }
}

error_stats read_error(const device_buffer& max_bits, const device_buffer& bad) {
  unsigned bits = 0;
  unsigned long long bad_count = 0;
  ATTN_CUDA_CHECK(cudaMemcpy(&bits, max_bits.get(), sizeof bits, cudaMemcpyDeviceToHost));
  ATTN_CUDA_CHECK(cudaMemcpy(&bad_count, bad.get(), sizeof bad_count, cudaMemcpyDeviceToHost));
  float worst = 0;
  std::memcpy(&worst, &bits, sizeof worst);
  return {worst, bad_count};
}

error_stats run_error(cudaKernel_t kernel, const void* out, const float* ref, int64_t n) {
  device_buffer max_bits(sizeof(unsigned)), bad(sizeof(unsigned long long));
  ATTN_CUDA_CHECK(cudaMemset(max_bits.get(), 0, sizeof(unsigned)));
  ATTN_CUDA_CHECK(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
  long long count = n;
  void* mb = max_bits.get();
  void* bc = bad.get();
  void* args[] = {&out, &ref, &count, &mb, &bc};
  launch(kernel, dim3(error_blocks), dim3(256), 0, nullptr, args);
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  return read_error(max_bits, bad);
}

}  // namespace

int64_t reference_memory_bytes(const shape& s, int64_t chunk_bytes) {
  const int64_t q_elems = s.batch * s.heads * s.q_len * s.head_dim;
  return pairs_per_chunk(s, chunk_bytes) * s.q_len * s.kv_len * 8 + q_elems * 4 + lse_bytes(s) +
         q_bytes(s);
}

reference_outputs compute_reference(const support_kernels& support, const problem& pr,
                                    int64_t chunk_bytes) {
  const shape& s = pr.shp;
  reference_outputs r;
  r.o_full = device_buffer(pr.q_elements() * 4);
  r.lse_full = device_buffer(lse_bytes(s));
  r.o_lowp = device_buffer(q_bytes(s));
  const int64_t pairs = pairs_per_chunk(s, chunk_bytes);
  device_buffer scores(pairs * s.q_len * s.kv_len * 4), probs(pairs * s.q_len * s.kv_len * 4);
  const int total = static_cast<int>(s.batch * s.heads);
  for (int bh0 = 0; bh0 < total; bh0 += static_cast<int>(pairs)) {
    const int n = std::min<int>(static_cast<int>(pairs), total - bh0);
    naive_pass(support, pr, false, bh0, n, scores.as<float>(), probs.get(), r.lse_full.as<float>(),
               r.o_full.get());
    naive_pass(support, pr, true, bh0, n, scores.as<float>(), probs.get(), nullptr, r.o_lowp.get());
  }
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  r.lowp_error = element_error(support, r.o_lowp.get(), r.o_full.as<float>(), pr.q_elements()).max_error;
  return r;
}

int64_t measure_materialized_peak(const support_kernels& support, const problem& pr) {
  const shape& s = pr.shp;
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  device_buffer out(q_bytes(s));  // the output is not extra: it exists for any implementation
  const int64_t before = free_device_memory();
  device_buffer scores(s.batch * s.heads * s.q_len * s.kv_len * 4);
  device_buffer probs(s.batch * s.heads * s.q_len * s.kv_len * element_size(s.dtype));
  naive_pass(support, pr, true, 0, static_cast<int>(s.batch * s.heads), scores.as<float>(),
             probs.get(), nullptr, out.get());
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  return before - free_device_memory();
}

void poison_outputs(const support_kernels& support, const problem& pr, cudaStream_t stream) {
  const std::pair<void*, int64_t> targets[] = {{pr.o.get(), pr.o.bytes() / 4},
                                               {pr.lse.get(), pr.lse.bytes() / 4}};
  for (auto [ptr, words] : targets) {
    long long n = words;
    void* args[] = {&ptr, &n};
    launch(support.poison, blocks_for(words), dim3(256), 0, stream, args);
  }
}

error_stats element_error(const support_kernels& support, const void* out, const float* ref,
                          int64_t n) {
  return run_error(support.error_elem, out, ref, n);
}

error_stats float_error(const support_kernels& support, const float* out, const float* ref,
                        int64_t n) {
  return run_error(support.error_f32, out, ref, n);
}

}  // namespace attn
