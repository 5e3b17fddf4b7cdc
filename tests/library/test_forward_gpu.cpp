// attn_tune_forward on a GPU (label gpu; skips without one): against a float64 reference under
// FlashAttention's rule (max error <= 2 x the naive low-precision error + 1e-4), in both layouts,
// with GQA, cross-attention, causal masks and fp16; several threads on one context; a bundle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"

namespace {

uint16_t to_bits(float x, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
    return static_cast<uint16_t>(u >> 16);
  }
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float round_to(float x, bool bf16) {
  const uint16_t b = to_bits(x, bf16);
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
};

int64_t offset(bool bshd, int64_t heads, int64_t n, int64_t d, int64_t b, int64_t h, int64_t i) {
  return bshd ? ((b * n + i) * heads + h) * d : ((b * heads + h) * n + i) * d;
}

// Runs one forward and returns (max error, allowed error) against float64 and the naive rule.
std::pair<double, double> run_and_compare(attn_tune::context& ctx, const attn_tune::problem& p, uint32_t seed,
                                          cudaStream_t stream = nullptr, attn_tune::choice* ran = nullptr) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16, bshd = p.layout == ATTN_TUNE_BSHD;
  const int64_t B = p.batch, H = p.heads, Hk = p.kv_heads, N = p.q_len, M = p.kv_len, D = p.head_dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto make = [&](int64_t count) {
    std::vector<float> v(count);
    for (auto& x : v) x = round_to(normal(rng), bf16);
    return v;
  };
  const auto q = make(B * H * N * D), k = make(B * Hk * M * D), v = make(B * Hk * M * D);
  auto upload = [&](const std::vector<float>& host, device_buffer& dev) {
    std::vector<uint16_t> bits(host.size());
    for (size_t i = 0; i < host.size(); ++i) bits[i] = to_bits(host[i], bf16);
    EXPECT_EQ(cudaMemcpy(dev.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  };
  device_buffer dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), dout(q.size() * 2), dlse(B * H * N * 4);
  upload(q, dq), upload(k, dk), upload(v, dv);
  const auto c = ctx.forward(dq.p, dk.p, dv.p, dout.p, static_cast<float*>(dlse.p), p, stream);
  if (ran) *ran = c;
  ctx.synchronize(stream);
  std::vector<uint16_t> out_bits(q.size());
  EXPECT_EQ(cudaMemcpy(out_bits.data(), dout.p, out_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  double error = 0, naive_error = 0;
  std::vector<double> s(M), s_naive(M);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t kh = h / (H / Hk), last = p.causal ? i + M - N : M - 1;
        const float* qr = &q[offset(bshd, H, N, D, b, h, i)];
        double mx = -INFINITY, mx_naive = -INFINITY;
        for (int64_t j = 0; j < M; ++j) {
          const float* kr = &k[offset(bshd, Hk, M, D, b, kh, j)];
          double dot = 0;
          float dot_naive = 0;
          for (int64_t c = 0; c < D; ++c) {
            dot += static_cast<double>(qr[c]) * kr[c];
            dot_naive += round_to(static_cast<float>(qr[c] * scale), bf16) * kr[c];
          }
          s[j] = j <= last ? dot * scale : -INFINITY;
          s_naive[j] = j <= last ? round_to(dot_naive, bf16) : -INFINITY;
          mx = std::max(mx, s[j]), mx_naive = std::max(mx_naive, s_naive[j]);
        }
        double sum = 0, sum_naive = 0;
        for (int64_t j = 0; j < M; ++j) {
          s[j] = j <= last ? std::exp(s[j] - mx) : 0, sum += s[j];
          s_naive[j] = j <= last ? std::exp(s_naive[j] - mx_naive) : 0, sum_naive += s_naive[j];
        }
        for (int64_t c = 0; c < D; ++c) {
          double o = 0, o_naive = 0;
          for (int64_t j = 0; j <= std::min(last, M - 1); ++j) {
            const float vj = v[offset(bshd, Hk, M, D, b, kh, j) + c];
            o += s[j] / sum * vj;
            o_naive += round_to(static_cast<float>(s_naive[j] / sum_naive), bf16) * vj;
          }
          if (last < 0) o = o_naive = 0;
          const uint16_t bits = out_bits[offset(bshd, H, N, D, b, h, i) + c];
          float got;
          if (bf16) {
            const uint32_t u = static_cast<uint32_t>(bits) << 16;
            std::memcpy(&got, &u, 4);
          } else {
            _Float16 x;
            std::memcpy(&x, &bits, 2);
            got = static_cast<float>(x);
          }
          error = std::max(error, std::isnan(got) ? INFINITY : std::abs(got - o));
          naive_error = std::max(naive_error, std::abs(round_to(static_cast<float>(o_naive), bf16) - o));
        }
      }
  return {error, 2 * naive_error + 1e-4};
}

class LibraryForward : public testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    attn_tune::context_options o;
    o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
    m_ctx.emplace(o);
  }
  std::optional<attn_tune::context> m_ctx;
};

void expect_passes(attn_tune::context& ctx, const attn_tune::problem& p) {
  const auto [error, allowed] = run_and_compare(ctx, p, 7);
  EXPECT_LE(error, allowed) << "B" << p.batch << " H" << p.heads << "/" << p.kv_heads << " N" << p.q_len << "x"
                            << p.kv_len << " D" << p.head_dim << " causal " << p.causal << " layout " << p.layout;
}

TEST_F(LibraryForward, BhsdAndBshd) {
  expect_passes(*m_ctx, attn_tune::make_problem(2, 4, 4, 256, 256, 64));
  expect_passes(*m_ctx, attn_tune::make_problem(2, 4, 4, 256, 256, 64, ATTN_TUNE_BF16, false, ATTN_TUNE_BSHD));
  expect_passes(*m_ctx, attn_tune::make_problem(1, 2, 2, 200, 200, 128, ATTN_TUNE_FP16, false, ATTN_TUNE_BSHD));
}

TEST_F(LibraryForward, GqaCrossAttentionAndCausal) {
  expect_passes(*m_ctx, attn_tune::make_problem(1, 8, 2, 128, 128, 64));
  expect_passes(*m_ctx, attn_tune::make_problem(1, 4, 4, 128, 384, 128));
  expect_passes(*m_ctx, attn_tune::make_problem(1, 4, 1, 300, 300, 64, ATTN_TUNE_BF16, true));
  expect_passes(*m_ctx, attn_tune::make_problem(1, 4, 2, 128, 320, 64, ATTN_TUNE_FP16, true));
  expect_passes(*m_ctx, attn_tune::make_problem(1, 2, 2, 64, 64, 256));
}

TEST_F(LibraryForward, SaysWhichConfigRan) {
  const auto c = m_ctx->choose(attn_tune::make_problem(1, 4, 4, 128, 128, 64));
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_FALLBACK);  // no table
  EXPECT_STREQ(c.config, "m128_n64_w4_s2");
}

TEST_F(LibraryForward, SeveralThreadsOnOneContext) {
  std::vector<std::thread> threads;
  std::vector<double> errors(8), allowed(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      const auto p = attn_tune::make_problem(1, 4, t % 2 ? 2 : 4, 128 + 64 * (t % 3), 192, 64, ATTN_TUNE_BF16, t % 2);
      std::tie(errors[t], allowed[t]) = run_and_compare(*m_ctx, p, 100 + t, s);
      cudaStreamDestroy(s);
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_LE(errors[t], allowed[t]) << "thread " << t;
}

TEST_F(LibraryForward, BadArgumentsLaunchNothing) {
  auto p = attn_tune::make_problem(1, 4, 4, 128, 128, 64);
  try {
    m_ctx->forward(nullptr, nullptr, nullptr, nullptr, nullptr, p);
    FAIL() << "no error";
  } catch (const attn_tune::error& e) {
    EXPECT_EQ(e.status(), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "q is NULL");
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(LibraryForward, BundleKernelsLoadWithoutNvrtc) {
  const std::string bundle = std::string(ATTN_TUNE_BINARY_DIR) + "/fixture.attnb";  // cli_bundle_fixture, sm_90a
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  attn_tune_context_options o{};
  o.struct_size = sizeof o;
  o.bundle = bundle.c_str();
  attn_tune_context* raw = nullptr;
  const attn_tune_status s = attn_tune_context_create(&o, &raw);
  if (prop.major != 9 || prop.minor != 0) {
    EXPECT_EQ(s, ATTN_TUNE_ERROR_BUNDLE);
    EXPECT_NE(std::string(attn_tune_last_error()).find("holds cubins for sm_90a"), std::string::npos);
    return;
  }
  if (s == ATTN_TUNE_ERROR_TABLE) GTEST_SKIP() << attn_tune_last_error();  // not an H200: the table's device
  ASSERT_EQ(s, ATTN_TUNE_OK) << attn_tune_last_error();
  attn_tune_context_destroy(raw);
  attn_tune::context_options co;
  co.bundle = bundle;
  attn_tune::context ctx(co);
  const auto p = attn_tune::make_problem(2, 4, 4, 1000, 1000, 64, ATTN_TUNE_BF16, true);
  attn_tune::choice ran{};
  const auto [error, allowed] = run_and_compare(ctx, p, 3, nullptr, &ran);
  EXPECT_LE(error, allowed);
  EXPECT_EQ(ran.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_EQ(ran.from_bundle, 1);
  EXPECT_STREQ(ran.config, "m64_n64_w4_s2");
}

}  // namespace
