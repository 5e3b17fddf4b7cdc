// The GPU reference against float64 on the CPU, the poison check, and the memory formula.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpu_fixture.hpp"
#include "plan/numeric.hpp"
#include "verify/cpu_reference.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {
// gtest finds this by argument-dependent lookup: test names and failures show the shape.
void PrintTo(const shape& s, std::ostream* os) { *os << describe(s); }
}  // namespace attn

namespace attn::testing {
namespace {

std::vector<float> widen(const device_runtime& rt, const device_buffer& b, dtype t) {
  std::vector<uint16_t> bits(b.bytes() / 2);
  rt.copy_to_host(bits.data(), b.get(), b.bytes());
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = elem_to_float(t, bits[i]);
  return out;
}

class reference_vs_cpu : public gpu_test, public ::testing::WithParamInterface<shape> {};

TEST_P(reference_vs_cpu, matches_float64) {
  const shape s = GetParam();
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const problem pr(s, *support, 1234);
  // A tiny chunk budget forces one (batch, head) pair per pass: chunking is tested too.
  const auto ref = compute_reference(*support, pr, 1);
  std::vector<float> o(pr.q_elements()), lse(lse_bytes(s) / 4);
  rt().copy_to_host(o.data(), ref.o_full.get(), o.size() * 4);
  rt().copy_to_host(lse.data(), ref.lse_full.get(), lse.size() * 4);
  std::vector<double> lse64;
  const auto expect = attention_fp64(s, widen(rt(), pr.q, s.dtype), widen(rt(), pr.k, s.dtype),
                                     widen(rt(), pr.v, s.dtype), &lse64);
  double worst = 0, worst_lse = 0;
  size_t not_finite = 0;  // std::max(worst, NaN) would drop a NaN: count them apart
  for (size_t i = 0; i < o.size(); ++i) {
    const double e = std::fabs(o[i] - expect[i]);
    if (!std::isfinite(e)) ++not_finite;
    else worst = std::max(worst, e);
  }
  EXPECT_EQ(not_finite, 0u) << "outputs that are NaN or infinite, " << describe(s);
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(lse64[i])) {
      EXPECT_TRUE(std::isinf(lse[i]) && lse[i] < 0) << "row " << i;
      continue;
    }
    const double e = std::fabs(lse[i] - lse64[i]);
    EXPECT_TRUE(std::isfinite(e)) << "LSE row " << i << " is " << lse[i];
    if (std::isfinite(e)) worst_lse = std::max(worst_lse, e);
  }
  EXPECT_LT(worst, 2e-5) << describe(s);  // fp32 arithmetic against float64
  EXPECT_LT(worst_lse, 2e-5) << describe(s);
  // The naive low-precision run is worse than fp32 but still close: it sets the tolerance.
  EXPECT_GT(ref.lowp_error, 1e-5);
  EXPECT_LT(ref.lowp_error, 5e-2);
}

shape make(int64_t b, int64_t h, int64_t hk, int64_t n, int64_t nk, int64_t d, bool causal,
           dtype t = dtype::bf16, layout l = layout::bhsd) {
  shape s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = n, s.kv_len = nk, s.head_dim = d;
  s.causal = causal, s.dtype = t, s.layout = l;
  return s;
}

INSTANTIATE_TEST_SUITE_P(shapes, reference_vs_cpu,
                         ::testing::Values(make(2, 2, 2, 77, 77, 64, false),
                                           make(1, 4, 2, 100, 37, 32, true),  // rows with no key
                                           make(1, 2, 1, 33, 130, 128, true, dtype::fp16, layout::bshd)),
                         [](const ::testing::TestParamInfo<shape>& info) {
                           std::string n = describe(info.param);
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST_F(gpu_test, poisoned_output_that_is_never_written_is_caught) {
  const shape s = make(1, 2, 2, 64, 64, 64, false);
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const problem pr(s, *support, 7);
  const auto ref = compute_reference(*support, pr, 1 << 20);
  poison_outputs(*support, pr, nullptr);  // and no kernel runs
  rt().synchronize_device();
  const auto err = element_error(*support, pr.o.get(), ref.o_full.as<float>(), pr.q_elements());
  EXPECT_EQ(err.bad, static_cast<uint64_t>(pr.q_elements()));
  const auto lse_err = float_error(*support, pr.lse.as<float>(), ref.lse_full.as<float>(), lse_bytes(s) / 4);
  EXPECT_EQ(lse_err.bad, static_cast<uint64_t>(lse_bytes(s) / 4));
}

TEST_F(gpu_test, materialized_memory_formula_matches_measured_peak) {
  // 2 x 8 x 2048^2: 256 MiB of fp32 scores + 128 MiB of bf16 probabilities = 384 MiB.
  const shape s = make(2, 8, 8, 2048, 2048, 64, false);
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const problem pr(s, *support, 11);
  const int64_t measured = measure_materialized_peak(*support, pr);
  const double formula = static_cast<double>(materialized_extra_bytes(s));
  EXPECT_NEAR(measured / formula, 1.0, 0.02) << "measured " << measured << " formula " << formula;
  std::printf("materialized: formula %.0f bytes, measured peak %lld; fused LSE measured %lld bytes\n",
              formula, static_cast<long long>(measured), static_cast<long long>(pr.lse_measured_bytes));
}

}  // namespace
}  // namespace attn::testing
