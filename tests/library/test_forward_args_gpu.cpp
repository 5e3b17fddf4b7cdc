// Issue 20, item 4, on a GPU (label gpu; skips without one): the library's arguments do what they
// say. A non-default softmax_scale changes O as float64 attention with that scale does; the LSE
// output matches float64's log-sum-exp (natural log; -inf for a row that sees no key); K and V
// given with their own (padded) strides read the same values as contiguous ones.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "library_gpu_fixture.hpp"
#include "reference.hpp"  // examples/cpp: bits <-> float

namespace {

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

// Q, K, V as rounded floats, [B, H, N, D] (contiguous BHSD).
struct inputs {
  std::vector<float> q, k, v;
};

inputs make_inputs(const attn_tune_problem& p, uint32_t seed) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto make = [&](int64_t count) {
    std::vector<float> x(count);
    for (auto& e : x) e = example::round_to(normal(rng), bf16);
    return x;
  };
  inputs in;
  in.q = make(p.batch * p.heads * p.q_len * p.head_dim);
  in.k = make(p.batch * p.kv_heads * p.kv_len * p.head_dim);
  in.v = make(p.batch * p.kv_heads * p.kv_len * p.head_dim);
  return in;
}

struct outputs {
  std::vector<float> o;    // [B, H, N_q, D]
  std::vector<float> lse;  // [B, H, N_q]
};

// Runs the forward with K and V laid out with `kv_row_pad` extra elements per row (0: contiguous,
// strides left to the library).
outputs run(attn_tune::context& ctx, attn_tune_problem p, const inputs& in, int64_t kv_row_pad = 0) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  const int64_t D = p.head_dim, row = D + kv_row_pad, kv_rows = p.batch * p.kv_heads * p.kv_len;
  auto upload = [&](const std::vector<float>& host, int64_t rows, int64_t stride, device_buffer& dev) {
    std::vector<uint16_t> bits(rows * stride, 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < D; ++c) bits[r * stride + c] = example::to_bits(host[r * D + c], bf16);
    EXPECT_EQ(cudaMemcpy(dev.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  };
  device_buffer dq(in.q.size() * 2), dk(kv_rows * row * 2), dv(kv_rows * row * 2), dout(in.q.size() * 2),
      dlse(p.batch * p.heads * p.q_len * 4);
  upload(in.q, p.batch * p.heads * p.q_len, D, dq);
  upload(in.k, kv_rows, row, dk);
  upload(in.v, kv_rows, row, dv);
  if (kv_row_pad) {
    p.kv_strides[0] = p.kv_heads * p.kv_len * row;
    p.kv_strides[1] = p.kv_len * row;
    p.kv_strides[2] = row;
  }
  ctx.forward(dq.p, dk.p, dv.p, dout.p, static_cast<float*>(dlse.p), p, nullptr);
  ctx.synchronize(nullptr);
  std::vector<uint16_t> bits(in.q.size());
  outputs out;
  out.lse.resize(p.batch * p.heads * p.q_len);
  EXPECT_EQ(cudaMemcpy(bits.data(), dout.p, bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.lse.data(), dlse.p, out.lse.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint16_t b : bits) out.o.push_back(example::from_bits(b, bf16));
  return out;
}

// float64 attention with `scale`; `naive` is the same in the input type (FlashAttention's rule:
// the kernel's error is at most twice the naive one, plus 1e-4).
struct reference {
  std::vector<double> o, lse;
  double naive_error = 0;
};

reference float64_attention(const attn_tune_problem& p, const inputs& in, double scale) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  const int64_t H = p.heads, N = p.q_len, M = p.kv_len, D = p.head_dim, group = p.heads / p.kv_heads;
  reference r;
  r.o.assign(in.q.size(), 0);
  r.lse.assign(p.batch * H * N, -INFINITY);
  std::vector<double> s(M), sn(M);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t last = std::min(p.causal ? i + M - N : M - 1, M - 1);
        if (last < 0) continue;
        const float* qr = &in.q[((b * H + h) * N + i) * D];
        double mx = -INFINITY, mxn = -INFINITY;
        for (int64_t j = 0; j <= last; ++j) {
          const float* kr = &in.k[((b * p.kv_heads + h / group) * M + j) * D];
          double dot = 0;
          float dotn = 0;
          for (int64_t c = 0; c < D; ++c) {
            dot += static_cast<double>(qr[c]) * kr[c];
            dotn += example::round_to(static_cast<float>(qr[c] * scale), bf16) * kr[c];
          }
          s[j] = dot * scale, sn[j] = example::round_to(dotn, bf16);
          mx = std::max(mx, s[j]), mxn = std::max(mxn, sn[j]);
        }
        double sum = 0, sumn = 0;
        for (int64_t j = 0; j <= last; ++j) {
          s[j] = std::exp(s[j] - mx), sum += s[j];
          sn[j] = std::exp(sn[j] - mxn), sumn += sn[j];
        }
        r.lse[(b * H + h) * N + i] = mx + std::log(sum);
        for (int64_t c = 0; c < D; ++c) {
          double o = 0, on = 0;
          for (int64_t j = 0; j <= last; ++j) {
            const float vj = in.v[((b * p.kv_heads + h / group) * M + j) * D + c];
            o += s[j] / sum * vj;
            on += example::round_to(static_cast<float>(sn[j] / sumn), bf16) * vj;
          }
          r.o[((b * H + h) * N + i) * D + c] = o;
          r.naive_error = std::max(r.naive_error, std::abs(example::round_to(static_cast<float>(on), bf16) - o));
        }
      }
  return r;
}

double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) e = std::max(e, std::isnan(got[i]) ? INFINITY : std::abs(got[i] - want[i]));
  return e;
}

class LibraryArgumentsGpu : public library_gpu_test {};

TEST_F(LibraryArgumentsGpu, ANonDefaultSoftmaxScaleIsTheOneApplied) {
  auto p = attn_tune::make_problem(1, 2, 2, 128, 192, 64);
  const inputs in = make_inputs(p, 11);
  const double scale = 0.37;  // not 1/sqrt(64) = 0.125
  p.softmax_scale = static_cast<float>(scale);
  const outputs got = run(*m_ctx, p, in);
  const reference want = float64_attention(p, in, scale);
  EXPECT_LE(max_error(got.o, want.o), 2 * want.naive_error + 1e-4);
  // ...and not the default's: float64 with 1/sqrt(D) is far from what ran.
  const reference default_scale = float64_attention(p, in, 0.125);
  EXPECT_GT(max_error(got.o, default_scale.o), 10 * (2 * want.naive_error + 1e-4));
  // The LSE is of the scaled scores.
  EXPECT_LE(max_error(got.lse, want.lse), 2e-3);
  // softmax_scale 0 is 1/sqrt(D).
  p.softmax_scale = 0;
  const outputs zero = run(*m_ctx, p, in);
  EXPECT_LE(max_error(zero.o, default_scale.o), 2 * default_scale.naive_error + 1e-4);
  EXPECT_LE(max_error(zero.lse, default_scale.lse), 2e-3);
}

TEST_F(LibraryArgumentsGpu, TheLseMatchesFloat64WithCausalMasksAndRowsThatSeeNoKey) {
  for (const auto& p : {attn_tune::make_problem(2, 4, 2, 256, 256, 128, ATTN_TUNE_BF16, true),
                        attn_tune::make_problem(1, 2, 1, 200, 136, 64, ATTN_TUNE_FP16, true),  // 64 rows see no key
                        attn_tune::make_problem(1, 2, 2, 96, 320, 64, ATTN_TUNE_BF16, false)}) {
    const inputs in = make_inputs(p, 5);
    const outputs got = run(*m_ctx, p, in);
    const reference want = float64_attention(p, in, 1.0 / std::sqrt(static_cast<double>(p.head_dim)));
    EXPECT_LE(max_error(got.o, want.o), 2 * want.naive_error + 1e-4) << p.q_len << "x" << p.kv_len;
    double worst = 0;
    int infinite_rows = 0;
    for (size_t i = 0; i < got.lse.size(); ++i) {
      if (std::isinf(want.lse[i])) {
        ++infinite_rows;
        EXPECT_TRUE(std::isinf(got.lse[i]) && got.lse[i] < 0) << "row " << i << ": " << got.lse[i];
        continue;
      }
      worst = std::max(worst, std::isnan(got.lse[i]) ? INFINITY : std::abs(got.lse[i] - want.lse[i]));
    }
    EXPECT_LE(worst, 2e-3) << p.q_len << "x" << p.kv_len;
    if (p.q_len > p.kv_len && p.causal) EXPECT_EQ(infinite_rows, p.batch * p.heads * (p.q_len - p.kv_len));
  }
}

TEST_F(LibraryArgumentsGpu, KAndVWithTheirOwnStridesReadTheSameValues) {
  auto p = attn_tune::make_problem(2, 4, 2, 128, 256, 64);
  const inputs in = make_inputs(p, 3);
  const outputs contiguous = run(*m_ctx, p, in);
  const outputs padded = run(*m_ctx, p, in, 16);  // rows of 80 elements
  EXPECT_EQ(max_error(padded.o, std::vector<double>(contiguous.o.begin(), contiguous.o.end())), 0.0);
  const reference want = float64_attention(p, in, 0.125);
  EXPECT_LE(max_error(padded.o, want.o), 2 * want.naive_error + 1e-4);
}

}  // namespace
