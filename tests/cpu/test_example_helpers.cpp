// The C++ example's host helpers (examples/cpp), which restate the tool's rules because the example
// builds against the installed library alone: its timing statistics must be the tool's
// (run/noise, run/stats), and its reference check must pass a right output and fail a wrong one,
// in both layouts, with GQA, N_kv != N_q and causal rows that see no key, a window and softcap,
// and a packed variable-length batch (each sequence alone); its options read a problem as
// attn-tune's do, and its FLOP count is the tool's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cold_timer.hpp"
#include "example_options.hpp"
#include "core/numeric.hpp"
#include "core/problem.hpp"
#include "parsed_options.hpp"
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

// The C API's problem of one of the tool's (its window, softcap, dv), and a packed batch's offsets.
attn_tune_problem c_problem(const attn::problem& s) {
  attn_tune_problem p = problem(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, s.dtype == dtype::bf16,
                                s.causal, s.layout == layout::bshd);
  p.head_dim_v = s.head_dim_v;
  if (has_window(s)) p.window = 1, p.window_left = s.window_left, p.window_right = s.window_right;
  p.softcap = static_cast<float>(s.softcap);
  return p;
}

example::packed_batch packed_of(const attn::problem& s) {
  if (!is_varlen(s)) return {};
  return {example::cumulative(q_lengths(s)), example::cumulative(kv_lengths(s))};
}

attn::problem tool_problem(int64_t b, int64_t h, int64_t h_kv, int64_t n_q, int64_t n_kv, int64_t d, bool causal,
                           const char* seqlens = "", const char* kv_seqlens = "", int64_t left = -1,
                           int64_t right = -1, double softcap = 0, int64_t dv = 0) {
  attn::problem s;
  s.batch = b, s.heads = h, s.kv_heads = h_kv, s.q_len = n_q, s.kv_len = n_kv, s.head_dim = d, s.causal = causal;
  s.seqlens = seqlens, s.kv_seqlens = kv_seqlens, s.window_left = left, s.window_right = right;
  s.softcap = softcap, s.head_dim_v = dv;
  canonicalize(s);
  validate(s);
  return s;
}

TEST(ExampleFlops, AreTheTools) {
  const attn::problem cases[] = {
      tool_problem(4, 32, 8, 1024, 1024, 128, false),
      tool_problem(2, 8, 8, 384, 1024, 128, true),                     // causal, N_kv > N_q: halved
      tool_problem(1, 16, 16, 512, 512, 192, true, "", "", -1, -1, 0, 128),  // dv != d
      tool_problem(2, 8, 2, 1000, 1000, 64, true, "", "", 128, 0),     // a causal window: its pairs
      tool_problem(2, 8, 2, 700, 900, 64, false, "", "", 100, 50, 30),  // a two-sided window, softcap
      tool_problem(4, 16, 16, 2048, 2048, 128, true, "2048/100/0/700"),          // packed, causal
      tool_problem(3, 8, 4, 64, 100, 64, false, "3/64/0", "100/0/5"),            // packed cross-attention
      tool_problem(3, 8, 4, 64, 100, 64, true, "3/64/10", "100/0/5"),            // causal per sequence
      tool_problem(4, 4, 4, 512, 512, 64, true, "512/1/37/300", "", 64, 0),      // packed, a window
  };
  for (const attn::problem& s : cases)
    EXPECT_DOUBLE_EQ(example::attention_flops(c_problem(s), packed_of(s)), attention_flops(s)) << describe(s);
}

// Random inputs of the problem's rows (a packed batch's totals), rounded to the dtype.
std::vector<float> rounded_normal(size_t count, bool bf16, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> t(count);
  for (float& x : t) x = example::round_to(normal(rng), bf16);
  return t;
}

TEST(ExampleReference, EachSequenceOfAPackedBatchAlone) {
  std::vector<attn::problem> cases = {
      tool_problem(4, 4, 2, 48, 48, 32, true, "48/5/0/30"),         // a sequence of none
      tool_problem(3, 2, 1, 40, 24, 32, true, "40/7/12", "24/0/3"),  // rows that see no key, a sequence of no keys
      tool_problem(3, 2, 2, 32, 32, 64, false, "32/9/17", "", 6, 2, 20),  // a two-sided window and softcap
      tool_problem(2, 2, 2, 40, 40, 32, true, "", "", 9, -1, 15),     // dense: a causal window and softcap
  };
  for (size_t at = 0; at < cases.size(); ++at)
    for (layout l : {layout::bhsd, layout::bshd}) {
      attn::problem s = cases[at];
      s.layout = l;
      s.dtype = at % 2 ? dtype::fp16 : dtype::bf16;
      const bool bf16 = s.dtype == dtype::bf16;
      std::mt19937 rng(11);
      const auto q = rounded_normal(static_cast<size_t>(q_rows(s) * s.heads * s.head_dim), bf16, rng);
      const auto k = rounded_normal(static_cast<size_t>(kv_rows(s) * s.kv_heads * s.head_dim), bf16, rng);
      const auto v = rounded_normal(static_cast<size_t>(kv_rows(s) * s.kv_heads * value_dim(s)), bf16, rng);
      const std::vector<double> o = attention_fp64(s, q, k, v);  // the tool's, per sequence
      std::vector<uint16_t> out(o.size());
      for (size_t i = 0; i < o.size(); ++i) out[i] = example::to_bits(static_cast<float>(o[i]), bf16);
      const attn_tune_problem p = c_problem(s);
      const example::packed_batch packed = packed_of(s);
      const std::string what = describe(s);
      const example::comparison right = example::compare(p, q, k, v, out, 1, 1, packed);
      EXPECT_LE(right.error, right.allowed) << what;
      EXPECT_LE(example::compare(p, q, k, v, out, 2, 3, packed).error, right.allowed) << what;
      // A wrong element in the last row of the last sequence (the packed tensors' last or a head's
      // last row) fails it.
      const int64_t last_b = s.batch - 1, last_i = example::q_count(p, packed, last_b) - 1;
      const size_t at_o = static_cast<size_t>(
          example::offset(p, false, last_b, s.heads - 1, last_i, value_dim(s), packed.cu_q) + value_dim(s) - 1);
      std::vector<uint16_t> wrong = out;
      wrong[at_o] = example::to_bits(example::from_bits(wrong[at_o], bf16) + 0.5f, bf16);
      EXPECT_GT(example::compare(p, q, k, v, wrong, 1, 1, packed).error, right.allowed) << what;
      // Read as one dense batch (the sequences not apart; the tensors padded to the dense sizes,
      // zeros past the packed rows), the same output fails.
      if (is_varlen(s)) {
        auto padded = [](auto t, int64_t size) {
          t.resize(static_cast<size_t>(size));
          return t;
        };
        const int64_t bn = s.batch * s.q_len * s.heads, bk = s.batch * s.kv_len * s.kv_heads;
        EXPECT_GT(example::compare(p, padded(q, bn * s.head_dim), padded(k, bk * s.head_dim),
                                   padded(v, bk * value_dim(s)), padded(out, bn * value_dim(s)))
                      .error,
                  right.allowed)
            << what;
      }
    }
}

// A packed sequence with no keys (or causal rows past its keys) must write zeros.
TEST(ExampleReference, APackedRowThatSeesNoKeyMustBeZero) {
  const attn::problem s = tool_problem(2, 1, 1, 8, 4, 32, true, "8/2", "4/0");
  const attn_tune_problem p = c_problem(s);
  const example::packed_batch packed = packed_of(s);
  std::vector<float> q(10 * 32, 0.5f), k(4 * 32, 0.25f), v(4 * 32, 1.0f);
  std::vector<uint16_t> out;
  for (double x : attention_fp64(s, q, k, v)) out.push_back(example::to_bits(static_cast<float>(x), true));
  EXPECT_LE(example::compare(p, q, k, v, out, 1, 1, packed).error, 1e-6);
  out[3 * 32] = example::to_bits(0.5f, true);  // sequence 0's row 3: its causal diagonal is left of key 0
  EXPECT_DOUBLE_EQ(example::compare(p, q, k, v, out, 1, 1, packed).error, 0.5);
  out[9 * 32] = example::to_bits(0.75f, true);  // sequence 1's last row: it has no keys
  EXPECT_DOUBLE_EQ(example::compare(p, q, k, v, out, 1, 1, packed).error, 0.75);
}

// parse_example_options on a command line of strings (the program's name is added).
example::example_options example_parsed(std::vector<std::string> line) {
  line.insert(line.begin(), "attn_tune_example");
  std::vector<char*> argv;
  for (auto& a : line) argv.push_back(a.data());
  return example::parse_example_options(static_cast<int>(argv.size()), argv.data());
}

// The example's options against attn-tune's for the same command line: the same problem (the
// longest length as N without --shape, a window's right side of 0 as causal), the same flops.
TEST(ExampleOptions, APackedBatchWindowAndSoftcapAsAttnTuneReadsThem) {
  const std::vector<std::vector<std::string>> lines = {
      {"--shape", "4,16,2048,128", "--seqlens", "2048,100,0,700", "--layout", "bshd", "--causal"},
      {"--seqlens", "5,9,3,1"},  // N: the longest, 9
      {"--shape", "3,8,64,64", "--kv-heads", "4", "--seqlens", "3,64,0", "--kv-seqlens", "100,0,5"},
      {"--shape", "2,8,512,64", "--window", "256,0", "--softcap", "50"},
      {"--shape", "2,8,512,64", "--seqlens", "512,17", "--window", "-1,8", "--dv", "128"},
  };
  for (const std::vector<std::string>& line : lines) {
    const attn::problem s = attn::testing::parsed(line).problem;
    const example::example_options o = example_parsed(line);
    const std::string what = describe(s);
    EXPECT_EQ(o.batch, s.batch) << what;
    EXPECT_EQ(o.q_len, s.q_len) << what;
    EXPECT_EQ(o.kv_len, s.kv_len) << what;
    EXPECT_EQ(o.causal, s.causal) << what;
    EXPECT_EQ(o.window_left, s.window_left) << what;
    EXPECT_EQ(o.window_right, s.window_right) << what;
    EXPECT_EQ(o.softcap, s.softcap) << what;
    EXPECT_EQ(o.seqlens, is_varlen(s) ? q_lengths(s) : std::vector<int64_t>{}) << what;
    EXPECT_EQ(o.kv_seqlens, is_varlen(s) ? kv_lengths(s) : std::vector<int64_t>{}) << what;
    attn_tune_problem p = problem(o.batch, o.heads, o.kv_heads, o.q_len, o.kv_len, o.head_dim, true, o.causal);
    if (o.head_dim_v != o.head_dim) p.head_dim_v = o.head_dim_v;
    if (o.window_left >= 0 || o.window_right >= 0) p.window = 1, p.window_left = o.window_left, p.window_right = o.window_right;
    example::packed_batch packed;
    if (!o.seqlens.empty()) packed = {example::cumulative(o.seqlens), example::cumulative(o.kv_seqlens)};
    EXPECT_DOUBLE_EQ(example::attention_flops(p, packed), attention_flops(s)) << what;
  }
}

TEST(ExampleOptions, ABadPackedBatchWindowOrSoftcapIsNamed) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--shape", "4,8,512,64", "--seqlens", "1,2,3"},
       "invalid --seqlens '1,2,3': 3 lengths for a batch of 4 (B of --shape): give one a sequence"},
      {{"--shape", "4,8,512,64", "--seqlens", "100,600,0,1"},
       "invalid --seqlens '100,600,0,1': length 600 is over 512 (N of --shape), the longest a sequence may be"},
      {{"--shape", "2,8,512,64", "--seqlens", "0,0"}, "invalid --seqlens '0,0': every length is 0: nothing to attend"},
      {{"--seqlens", "1,,2"}, "invalid --seqlens '1,,2': '' is not a length (a whole number >= 0)"},
      {{"--seqlens", "1,-2"}, "invalid --seqlens '1,-2': '-2' is not a length (a whole number >= 0)"},
      {{"--shape", "2,8,512,64", "--kv-seqlens", "3,4"},
       "--kv-seqlens '3,4' needs --seqlens: the packed batch's queries' lengths"},
      {{"--shape", "2,8,512,64", "--seqlens", "3,4", "--kv-len", "1024"},
       "--seqlens with --kv-len 1024 != N 512: cross-attention of a packed batch needs the keys' lengths "
       "(--kv-seqlens)"},
      {{"--shape", "2,8,512,64", "--seqlens", "3,4", "--kv-seqlens", "2000,1", "--kv-len", "1024"},
       "invalid --kv-seqlens '2000,1': length 2000 is over 1024 (--kv-len), the longest a sequence may be"},
      {{"--shape", "2,8,512,64", "--seqlens", "3,4", "--kv-seqlens", "0,0"},
       "invalid --kv-seqlens '0,0': every length is 0: nothing to attend"},
      {{"--shape", "2,1,2000000000,64", "--seqlens", "2000000000,2000000000"},
       "invalid --seqlens '2000000000,2000000000': 4000000000 rows in all, more than int32 offsets (cu_seqlens) hold"},
      {{"--window", "5"}, "invalid --window '5': expected LEFT,RIGHT, each -1 (no limit) or a count of keys"},
      {{"--window", "3,-2"}, "invalid --window '3,-2': expected LEFT,RIGHT, each -1 (no limit) or a count of keys"},
      {{"--causal", "--window", "3,4"},
       "invalid --window '3,4' with --causal: the causal mask hides every key right of the diagonal, so RIGHT must "
       "be 0 or -1"},
      {{"--softcap", "-1"}, "invalid --softcap '-1': expected 0 (off) or a positive cap, e.g. 50"},
      {{"--softcap", "inf"}, "invalid --softcap 'inf': expected 0 (off) or a positive cap, e.g. 50"},
  };
  for (const auto& [line, message] : cases) {
    try {
      example_parsed(line);
      ADD_FAILURE() << "no error for " << message;
    } catch (const example::usage_error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

}  // namespace
}  // namespace attn
