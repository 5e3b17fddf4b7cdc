// A packed variable-length batch through the C API on a GPU (label gpu; skips without one):
// cu_seqlens_q and cu_seqlens_k on the device, Q and O [total_q, H, D] (BSHD) or [H, total_q, D]
// (BHSD) with strides left to the library, each sequence against float64 under FlashAttention's
// rule (examples/cpp/reference.hpp, the sequence as a batch of one), the LSE [H, total_q] against
// float64's log-sum-exp (-inf where a row sees no key); empty sequences, GQA, cross-attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "library_gpu_fixture.hpp"
#include "reference.hpp"  // examples/cpp

namespace {

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

struct packed_case {
  int64_t heads, kv_heads, head_dim;
  std::vector<int> q_lens, k_lens;  // k_lens empty: self-attention (one offsets array for both)
  bool causal;
  attn_tune_layout layout;
  attn_tune_dtype dtype = ATTN_TUNE_BF16;
};

std::vector<int> offsets(const std::vector<int>& lengths) {
  std::vector<int> starts{0};
  for (int n : lengths) starts.push_back(starts.back() + n);
  return starts;
}

// [rows, heads, D] <-> [heads, rows, D]
std::vector<float> swap_rows_and_heads(const std::vector<float>& x, int64_t rows, int64_t heads, int64_t d) {
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(&x[(r * heads + h) * d], d, &out[(h * rows + r) * d]);
  return out;
}

// float64 log-sum-exp of query row i of a sequence of n_q queries and n_k keys (q, k: [rows, heads, D]
// of that sequence), bottom-right causal; -inf when the row sees no key.
double float64_lse(const std::vector<float>& q, const std::vector<float>& k, const packed_case& c, int64_t n_q,
                   int64_t n_k, int64_t h, int64_t i) {
  const int64_t D = c.head_dim, kh = h / (c.heads / c.kv_heads);
  const int64_t last = std::min(c.causal ? i + n_k - n_q : n_k - 1, n_k - 1);
  if (last < 0) return -INFINITY;
  std::vector<double> s;
  for (int64_t j = 0; j <= last; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < D; ++e) dot += double(q[(i * c.heads + h) * D + e]) * k[(j * c.kv_heads + kh) * D + e];
    s.push_back(dot / std::sqrt(double(D)));
  }
  const double mx = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += std::exp(x - mx);
  return mx + std::log(sum);
}

void expect_packed_forward_passes(attn_tune::context& ctx, const packed_case& c) {
  const bool bf16 = c.dtype == ATTN_TUNE_BF16, self = c.k_lens.empty();
  const std::vector<int>& k_lens = self ? c.q_lens : c.k_lens;
  const std::vector<int> cu_q = offsets(c.q_lens), cu_k = offsets(k_lens);
  const int64_t B = static_cast<int64_t>(c.q_lens.size()), H = c.heads, Hk = c.kv_heads, D = c.head_dim;
  const int64_t total_q = cu_q.back(), total_k = cu_k.back();
  std::mt19937 rng(17);
  std::normal_distribution<float> normal;
  auto make = [&](int64_t count) {
    std::vector<float> x(count);
    for (auto& e : x) e = example::round_to(normal(rng), bf16);
    return x;
  };
  // Packed as [total, heads, D] on the host; on the device in the case's layout.
  const auto q = make(total_q * H * D), k = make(total_k * Hk * D), v = make(total_k * Hk * D);
  const bool bhsd = c.layout == ATTN_TUNE_BHSD;
  auto upload = [&](const std::vector<float>& host, int64_t rows, int64_t heads, device_buffer& dev) {
    const std::vector<float> laid = bhsd ? swap_rows_and_heads(host, rows, heads, D) : host;
    std::vector<uint16_t> bits(laid.size());
    for (size_t i = 0; i < laid.size(); ++i) bits[i] = example::to_bits(laid[i], bf16);
    EXPECT_EQ(cudaMemcpy(dev.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  };
  device_buffer dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), dout(q.size() * 2), dlse(H * total_q * 4);
  device_buffer dcu_q(cu_q.size() * 4), dcu_k(cu_k.size() * 4);
  upload(q, total_q, H, dq), upload(k, total_k, Hk, dk), upload(v, total_k, Hk, dv);
  EXPECT_EQ(cudaMemcpy(dcu_q.p, cu_q.data(), cu_q.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dcu_k.p, cu_k.data(), cu_k.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);

  const int max_q = *std::max_element(c.q_lens.begin(), c.q_lens.end());
  const int max_k = *std::max_element(k_lens.begin(), k_lens.end());
  auto p = attn_tune::make_problem(B, H, Hk, max_q, max_k, D, c.dtype, c.causal, c.layout);
  p.cu_seqlens_q = static_cast<const int32_t*>(dcu_q.p);
  p.cu_seqlens_k = static_cast<const int32_t*>(self ? dcu_q.p : dcu_k.p);
  p.total_q = total_q, p.total_k = total_k;
  const attn_tune::choice ran = ctx.forward(dq.p, dk.p, dv.p, dout.p, static_cast<float*>(dlse.p), p);
  EXPECT_STREQ(ran.family, "fa2");  // the only family of packed batches
  ctx.synchronize();
  std::vector<uint16_t> out_bits(q.size());
  std::vector<float> lse(H * total_q);
  EXPECT_EQ(cudaMemcpy(out_bits.data(), dout.p, out_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(lse.data(), dlse.p, lse.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  if (bhsd) {  // back to [total_q, H, D]
    std::vector<float> o(out_bits.size());
    for (size_t i = 0; i < o.size(); ++i) o[i] = example::from_bits(out_bits[i], bf16);
    o = swap_rows_and_heads(o, H, total_q, D);
    for (size_t i = 0; i < o.size(); ++i) out_bits[i] = example::to_bits(o[i], bf16);
  }

  for (int64_t b = 0; b < B; ++b) {
    const int64_t n_q = c.q_lens[b], n_k = k_lens[b];
    const std::string what = "sequence " + std::to_string(b) + " of " + std::to_string(n_q) + " queries and " +
                             std::to_string(n_k) + " keys, layout " + std::to_string(c.layout);
    if (n_q == 0) continue;
    // Sequence b of a packed [total, heads, D] tensor is a contiguous BSHD tensor of batch 1.
    auto rows = [&](const auto& x, int start, int64_t count, int64_t heads) {
      return std::vector<typename std::decay_t<decltype(x)>::value_type>(x.begin() + start * heads * D,
                                                                          x.begin() + (start + count) * heads * D);
    };
    const auto qb = rows(q, cu_q[b], n_q, H), kb = rows(k, cu_k[b], n_k, Hk), vb = rows(v, cu_k[b], n_k, Hk);
    const auto ob = rows(out_bits, cu_q[b], n_q, H);
    const auto one = attn_tune::make_problem(1, H, Hk, n_q, n_k, D, c.dtype, c.causal, ATTN_TUNE_BSHD);
    const example::comparison r = example::compare(one, qb, kb, vb, ob);
    EXPECT_LE(r.error, r.allowed) << what;
    double worst = 0;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < n_q; ++i) {
        const double want = float64_lse(qb, kb, c, n_q, n_k, h, i);
        const float got = lse[h * total_q + cu_q[b] + i];
        if (std::isinf(want)) {
          EXPECT_TRUE(std::isinf(got) && got < 0) << what << ", head " << h << " row " << i << ": LSE " << got;
          continue;
        }
        worst = std::max(worst, std::isnan(got) ? INFINITY : std::abs(got - want));
      }
    EXPECT_LE(worst, 2e-3) << what << ": LSE";
  }
}

class LibraryVarlen : public library_gpu_test {};

TEST_F(LibraryVarlen, RaggedSelfAttentionCausalGqa) {
  expect_packed_forward_passes(*m_ctx, {8, 2, 128, {517, 0, 1, 130, 300}, {}, true, ATTN_TUNE_BSHD});
  expect_packed_forward_passes(*m_ctx, {4, 4, 64, {400, 17, 0, 255}, {}, false, ATTN_TUNE_BHSD});
}

TEST_F(LibraryVarlen, CrossAttentionWithEmptyKeysFp16) {
  expect_packed_forward_passes(*m_ctx, {4, 1, 64, {300, 5, 129}, {700, 0, 64}, false, ATTN_TUNE_BHSD, ATTN_TUNE_FP16});
  // More queries than keys, causal: the first rows of sequence 0 see no key (O = 0, LSE = -inf).
  expect_packed_forward_passes(*m_ctx, {4, 2, 64, {200, 64}, {136, 64}, true, ATTN_TUNE_BSHD});
}

}  // namespace
