// The C++ example's host helpers (examples/cpp), which restate the tool's rules because the example
// builds against the installed library alone: its timing statistics must be the tool's
// (run/noise, run/stats), and its reference check must pass a right output and fail a wrong one,
// in both layouts, with GQA, N_kv != N_q and causal rows that see no key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cold_timer.hpp"
#include "example_options.hpp"
#include "core/numeric.hpp"
#include "reference.hpp"
#include "run/noise.hpp"
#include "run/stats.hpp"
#include "verify/cpu_reference.hpp"

namespace attn {
namespace {

// The example converts fp16 in integer arithmetic (no _Float16: clang 14 refuses it on x86-64);
// it must agree with the tool's conversions bit for bit: every half, and floats of every exponent.
TEST(ExampleHalf, ConversionsAreTheTools) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float got = example::from_bits(static_cast<uint16_t>(b), false), want = half_to_float(static_cast<uint16_t>(b));
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << b;
    else EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << b;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isnan(x)) continue;
    ASSERT_EQ(example::to_bits(x, false), float_to_half(x)) << bits;
  }
  for (float x : {65504.f, 65519.99f, 65520.f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 2.99e-8f, -0.f})
    EXPECT_EQ(example::to_bits(x, false), float_to_half(x)) << x;
  EXPECT_TRUE(std::isnan(example::from_bits(example::to_bits(std::nanf(""), false), false)));
}

TEST(ExampleTimer, NoiseAndQuantilesAreTheTools) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> ms(0, 0.05);
  for (int n : {6, 7, 20, 21, 35, 100, 300}) {
    std::vector<double> sorted(static_cast<size_t>(n));
    for (double& x : sorted) x = ms(rng);
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(example::median_noise(sorted), relative_median_noise(sorted)) << n;
    for (double q : {0.25, 0.5, 0.75}) EXPECT_DOUBLE_EQ(example::quantile(sorted, q), quantile(sorted, q)) << n;
  }
}

// attn_tune::make_problem without the library (attn_tune_default_problem is in libattn_tune).
attn_tune_problem problem(int64_t b, int64_t h, int64_t h_kv, int64_t n_q, int64_t n_kv, int64_t d, bool bf16,
                          bool causal, bool bshd = false) {
  attn_tune_problem p{};
  p.struct_size = sizeof p;
  p.batch = b, p.heads = h, p.kv_heads = h_kv, p.q_len = n_q, p.kv_len = n_kv, p.head_dim = d;
  p.dtype = bf16 ? ATTN_TUNE_BF16 : ATTN_TUNE_FP16, p.layout = bshd ? ATTN_TUNE_BSHD : ATTN_TUNE_BHSD;
  p.causal = causal;
  return p;
}

struct case_t {
  int64_t b, h, h_kv, n_q, n_kv, d;
  bool causal, bshd, bf16;
};

// O of float64 attention in the problem's layout, as the kernel would write it (rounded bits).
std::vector<uint16_t> right_output(const case_t& c, const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v) {
  attn::problem s;
  s.batch = c.b, s.heads = c.h, s.kv_heads = c.h_kv, s.q_len = c.n_q, s.kv_len = c.n_kv, s.head_dim = c.d;
  s.causal = c.causal, s.layout = c.bshd ? layout::bshd : layout::bhsd, s.dtype = c.bf16 ? dtype::bf16 : dtype::fp16;
  const std::vector<double> o = attention_fp64(s, q, k, v);
  std::vector<uint16_t> bits(o.size());
  for (size_t i = 0; i < o.size(); ++i) bits[i] = example::to_bits(static_cast<float>(o[i]), c.bf16);
  return bits;
}

TEST(ExampleReference, PassesTheRightOutputAndFailsAWrongOne) {
  const case_t cases[] = {{1, 4, 2, 32, 48, 16, true, false, true},   // GQA, N_kv > N_q, causal
                          {2, 2, 2, 40, 24, 32, true, true, false},   // N_q > N_kv: 16 rows see no key
                          {1, 2, 1, 16, 16, 16, false, true, true}};
  for (const case_t& c : cases) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    auto tensor = [&](int64_t heads, int64_t n) {
      std::vector<float> t(static_cast<size_t>(c.b * heads * n * c.d));
      for (float& x : t) x = example::round_to(normal(rng), c.bf16);
      return t;
    };
    const auto q = tensor(c.h, c.n_q), k = tensor(c.h_kv, c.n_kv), v = tensor(c.h_kv, c.n_kv);
    const attn_tune_problem p = problem(c.b, c.h, c.h_kv, c.n_q, c.n_kv, c.d, c.bf16, c.causal, c.bshd);
    std::vector<uint16_t> out = right_output(c, q, k, v);
    const example::comparison right = example::compare(p, q, k, v, out);
    EXPECT_LE(right.error, right.allowed) << c.n_q << "x" << c.n_kv;
    EXPECT_GT(right.allowed, 1e-4);
    // Sampled heads and rows see the same right output.
    EXPECT_LE(example::compare(p, q, k, v, out, 2, 3).error, right.allowed);
    // A wrong element in the last checked row of the last head fails it.
    const int64_t last = c.b * c.h * c.n_q * c.d - 1;
    out[static_cast<size_t>(last)] = example::to_bits(example::from_bits(out[static_cast<size_t>(last)], c.bf16) + 0.5f, c.bf16);
    EXPECT_GT(example::compare(p, q, k, v, out).error, right.allowed) << c.n_q << "x" << c.n_kv;
  }
}

TEST(ExampleReference, ARowThatSeesNoKeyMustBeZero) {
  const case_t c{1, 1, 1, 8, 4, 16, true, false, true};  // rows 0-3 see no key (bottom-right)
  std::vector<float> q(8 * 16, 0.5f), k(4 * 16, 0.25f), v(4 * 16, 1.0f);
  const attn_tune_problem p = problem(1, 1, 1, 8, 4, 16, true, true);
  std::vector<uint16_t> out = right_output(c, q, k, v);
  EXPECT_LE(example::compare(p, q, k, v, out).error, 1e-6);
  out[3 * 16] = example::to_bits(0.75f, true);  // row 3 sees no key
  EXPECT_DOUBLE_EQ(example::compare(p, q, k, v, out).error, 0.75);
  out[3 * 16] = example::to_bits(NAN, true);
  EXPECT_TRUE(std::isinf(example::compare(p, q, k, v, out).error));
}

TEST(ExampleOptions, TheProblemAsAttnTuneSpellsIt) {
  const char* argv[] = {"x", "--shape", "2,32,1024,128", "--kv-heads", "8", "--kv-len", "4096", "--dtype", "fp16",
                        "--layout", "bshd", "--causal", "--table", "t.csv"};
  const auto o = example::parse_example_options(14, const_cast<char**>(argv));
  EXPECT_EQ(o.batch, 2);
  EXPECT_EQ(o.heads, 32);
  EXPECT_EQ(o.kv_heads, 8);
  EXPECT_EQ(o.q_len, 1024);
  EXPECT_EQ(o.kv_len, 4096);
  EXPECT_EQ(o.head_dim, 128);
  EXPECT_EQ(o.dtype, ATTN_TUNE_FP16);
  EXPECT_EQ(o.layout, ATTN_TUNE_BSHD);
  EXPECT_TRUE(o.causal);
  EXPECT_EQ(o.context.table, "t.csv");
  const char* plain[] = {"x", "1,8,512,64"};
  const auto d = example::parse_example_options(2, const_cast<char**>(plain));
  EXPECT_EQ(d.kv_heads, 8);  // default: H, N
  EXPECT_EQ(d.kv_len, 512);
  const char* bad[] = {"x", "--kv-len", "12x"};
  try {
    example::parse_example_options(3, const_cast<char**>(bad));
    FAIL() << "no error";
  } catch (const example::usage_error& e) {
    EXPECT_STREQ(e.what(), "invalid --kv-len '12x': expected a positive whole number");
  }
}

}  // namespace
}  // namespace attn
