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
#include "library_gpu_fixture.hpp"
#include "reference.hpp"  // examples/cpp

namespace {

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
};

// Runs one forward and returns (max error, allowed error) against float64 and the naive rule.
std::pair<double, double> run_and_compare(attn_tune::context& ctx, const attn_tune::problem& p, uint32_t seed,
                                          cudaStream_t stream = nullptr, attn_tune::choice* ran = nullptr) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  const int64_t B = p.batch, H = p.heads, Hk = p.kv_heads, N = p.q_len, M = p.kv_len, D = p.head_dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto make = [&](int64_t count) {
    std::vector<float> v(count);
    for (auto& x : v) x = example::round_to(normal(rng), bf16);
    return v;
  };
  const auto q = make(B * H * N * D), k = make(B * Hk * M * D), v = make(B * Hk * M * D);
  auto upload = [&](const std::vector<float>& host, device_buffer& dev) {
    std::vector<uint16_t> bits(host.size());
    for (size_t i = 0; i < host.size(); ++i) bits[i] = example::to_bits(host[i], bf16);
    EXPECT_EQ(cudaMemcpy(dev.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  };
  device_buffer dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), dout(q.size() * 2), dlse(B * H * N * 4);
  upload(q, dq), upload(k, dk), upload(v, dv);
  const auto c = ctx.forward(dq.p, dk.p, dv.p, dout.p, static_cast<float*>(dlse.p), p, stream);
  if (ran) *ran = c;
  ctx.synchronize(stream);
  std::vector<uint16_t> out_bits(q.size());
  EXPECT_EQ(cudaMemcpy(out_bits.data(), dout.p, out_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  const example::comparison r = example::compare(p, q, k, v, out_bits);
  return {r.error, r.allowed};
}

class LibraryForward : public library_gpu_test {};

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
