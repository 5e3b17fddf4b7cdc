// The GPU reference against float64 on the CPU, the device fill of each kind of inputs, and the
// poison check.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "gpu_fixture.hpp"
#include "core/numeric.hpp"
#include "verify/cpu_reference.hpp"
#include "verify/gpu_reference.hpp"
#include "verify/input_fill.hpp"

namespace attn {
// gtest finds this by argument-dependent lookup: test names and failures show the shape.
void PrintTo(const problem& s, std::ostream* os) { *os << describe(s); }
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

using reference_case = std::tuple<problem, input_kind>;

class reference_vs_cpu : public gpu_test, public ::testing::WithParamInterface<reference_case> {};

TEST_P(reference_vs_cpu, matches_float64) {
  const auto& [s, inputs] = GetParam();
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const device_problem pr(s, *support, 1234, inputs);
  // A tiny chunk budget forces one (batch, head) pair per pass: chunking is tested too.
  const auto ref = compute_reference(*support, pr, 1);
  std::vector<float> o(pr.o_elements()), lse(lse_bytes(s) / 4);
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
  // fp32 arithmetic against float64. Logits of up to about 40 (wide, sink) carry about 1e-5 of
  // fp32 rounding each, which the softmax passes on.
  const double fp32_tolerance = inputs == input_kind::normal ? 2e-5 : 2e-4;
  EXPECT_LT(worst, fp32_tolerance) << describe(s);
  EXPECT_LT(worst_lse, fp32_tolerance) << describe(s);
  // The naive low-precision run is worse than fp32 but still close: it sets the tolerance.
  EXPECT_GT(ref.lowp_error, 1e-5);
  EXPECT_LT(ref.lowp_error, inputs == input_kind::normal ? 5e-2 : 2.0);
  // Rounding only P and O costs something, and with wide logits less than the naive run, which
  // rounds the logits themselves. (With sinks both are mostly the sink's V, rounded alike.)
  EXPECT_GT(ref.rounding_error, 0.0);
  if (inputs == input_kind::wide) EXPECT_LT(ref.rounding_error, ref.lowp_error);
  std::printf("%s, %s inputs: naive error %.3e, rounding error %.3e\n", describe(s).c_str(),
              to_string(inputs).c_str(), ref.lowp_error, ref.rounding_error);
}

problem make(int64_t b, int64_t h, int64_t hk, int64_t n, int64_t nk, int64_t d, bool causal,
           dtype t = dtype::bf16, layout l = layout::bhsd) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = n, s.kv_len = nk, s.head_dim = d;
  s.causal = causal, s.dtype = t, s.layout = l;
  return s;
}

problem with_dv(problem s, int64_t dv) {
  s.head_dim_v = dv;
  return s;
}

INSTANTIATE_TEST_SUITE_P(shapes, reference_vs_cpu,
                         ::testing::Combine(::testing::Values(make(2, 2, 2, 77, 77, 64, false),
                                                              make(1, 4, 2, 100, 37, 32, true),  // rows with no key
                                                              make(1, 2, 1, 33, 130, 128, true, dtype::fp16,
                                                                   layout::bshd),
                                                              with_dv(make(1, 4, 2, 65, 90, 96, true), 40),  // dv != d
                                                              with_dv(make(1, 2, 2, 50, 50, 32, false, dtype::bf16,
                                                                           layout::bshd), 64)),
                                            ::testing::Values(input_kind::normal, input_kind::wide, input_kind::sink)),
                         [](const ::testing::TestParamInfo<reference_case>& info) {
                           std::string n = describe(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param));
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The device fills Q, K and V as verify/input_fill.hpp describes (its CPU test checks what those
// distributions do to the scores): the spread of each tensor along the sequence, the offset, and
// the sink rows.
class inputs_on_device : public gpu_test, public ::testing::WithParamInterface<input_kind> {};

double row_std(const std::vector<float>& x, int64_t first_row, int64_t rows, int64_t d) {
  double sum = 0, sq = 0;
  for (int64_t i = first_row * d; i < (first_row + rows) * d; ++i) sum += x[i], sq += double(x[i]) * x[i];
  const double n = double(rows * d), mean = sum / n;
  return std::sqrt(sq / n - mean * mean);
}
double mean_of(const std::vector<float>& x) {
  double sum = 0;
  for (float v : x) sum += v;
  return sum / double(x.size());
}

TEST_P(inputs_on_device, follow_their_distribution) {
  const input_kind kind = GetParam();
  const problem s = make(1, 1, 1, 3000, 3000, 64, false);  // bhsd, one head: element i is in row i / D
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const device_problem pr(s, *support, 99, kind);
  const auto q = widen(rt(), pr.q, s.dtype), k = widen(rt(), pr.k, s.dtype), v = widen(rt(), pr.v, s.dtype);
  const int64_t d = s.head_dim, n = s.kv_len;
  const attn_k::input_fill fq = input_fill_for(kind, tensor_role::q, s), fk = input_fill_for(kind, tensor_role::k, s);
  // Rows 1..100 and the last 100 (row 0 may be a sink row).
  EXPECT_NEAR(row_std(q, 1, 100, d), fq.scale, 0.05 * fq.scale) << "Q";
  EXPECT_NEAR(mean_of(q), fq.offset, 0.02) << "Q";
  EXPECT_NEAR(row_std(k, 1, 100, d), fk.scale * (1 + fk.ramp * 50.5 / (n - 1)), 0.05 * fk.scale * (1 + fk.ramp))
      << "K, first rows";
  EXPECT_NEAR(row_std(k, n - 101, 100, d), fk.scale * (1 + fk.ramp * (n - 51.5) / (n - 1)),
              0.05 * fk.scale * (1 + fk.ramp))
      << "K, last rows";
  EXPECT_NEAR(row_std(v, 1, 100, d), 1.0, 0.05) << "V";
  for (int i = 0; i < fk.sinks; ++i)
    for (int64_t e = 0; e < d; ++e)
      ASSERT_NEAR(k[fk.sink_row[i] * d + e], fk.sink_value[i], 0.02 * fk.sink_value[i])
          << "sink row " << fk.sink_row[i];
  EXPECT_EQ(fk.sinks, kind == input_kind::sink ? 3 : 0);
}

INSTANTIATE_TEST_SUITE_P(kinds, inputs_on_device,
                         ::testing::Values(input_kind::normal, input_kind::wide, input_kind::sink),
                         [](const ::testing::TestParamInfo<input_kind>& info) { return to_string(info.param); });

TEST_F(gpu_test, poisoned_output_that_is_never_written_is_caught) {
  const problem s = make(1, 2, 2, 64, 64, 64, false);
  const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
  const device_problem pr(s, *support, 7);
  const auto ref = compute_reference(*support, pr, 1 << 20);
  poison_outputs(*support, pr, nullptr);  // and no kernel runs
  rt().synchronize_device();
  const auto err = element_error(*support, pr.o.get(), ref.o_full.as<float>(), pr.o_elements());
  EXPECT_EQ(err.bad, static_cast<uint64_t>(pr.o_elements()));
  const auto lse_err = float_error(*support, pr.lse.as<float>(), ref.lse_full.as<float>(), lse_bytes(s) / 4);
  EXPECT_EQ(lse_err.bad, static_cast<uint64_t>(lse_bytes(s) / 4));
}

// The memory formula (materialized_extra_bytes) is checked against PyTorch's materializing
// attention, which allocates for itself: ctest's gpu_memory_formula_pytorch runs
// scripts/check_memory_formula.py. (A test here measured buffers sized by the formula itself.)

}  // namespace
}  // namespace attn::testing
