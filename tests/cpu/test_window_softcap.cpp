// A sliding window and softcap without a GPU (issue 23, items 3 and 4): the problem's fields
// (parsing, validation and its messages, the canonical causal form, the visible pairs TFLOPS
// counts), the CLI options, which families take them, the kernel parameters, the float64
// reference against hand-computed rows, and that fa2's window and softcap variants compile.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "codegen/kernel_args.hpp"
#include "common/resources.cuh"  // kernels/common: the hopper schedule bits
#include "core/problem.hpp"
#include "family_checks.hpp"
#include "hopper_compile_checks.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "run/orchestrator.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"
#include "verify/cpu_reference.hpp"

namespace attn {
namespace {

using attn::testing::invalid_input_message;

problem square(int64_t n, bool causal = false) {
  problem s;
  s.batch = 2, s.heads = 4, s.kv_heads = 2, s.q_len = s.kv_len = n, s.head_dim = 64, s.causal = causal;
  return s;
}

// The visible pairs by brute force: FlashAttention's rule, pair by pair.
double brute_pairs(const problem& s, int64_t kv_len) {
  double n = 0;
  for (int64_t i = 0; i < s.q_len; ++i)
    for (int64_t j = 0; j < kv_len; ++j) {
      const int64_t diagonal = i + kv_len - s.q_len;
      const bool left = s.window_left < 0 || j >= diagonal - s.window_left;
      const int64_t right_side = s.causal ? 0 : s.window_right;
      const bool right = right_side < 0 || j <= diagonal + right_side;
      n += left && right;
    }
  return n;
}

TEST(Window, VisiblePairsAreCountedExactly) {
  for (int64_t q : {1, 7, 64, 100})
    for (int64_t kv : {1, 5, 64, 130})
      for (int64_t left : {-1, 0, 3, 50, 1000})
        for (int64_t right : {-1, 0, 2, 40})
          for (bool causal : {false, true}) {
            if (causal && right > 0) continue;
            problem s = square(q);
            s.kv_len = kv, s.causal = causal, s.window_left = left, s.window_right = causal ? -1 : right;
            canonicalize(s);
            EXPECT_EQ(visible_pairs(s, kv), brute_pairs(s, kv))
                << "q " << q << " kv " << kv << " window " << left << "," << right << (causal ? " causal" : "");
          }
}

TEST(Window, FlopsCountTheVisiblePairsAndDenseStaysAsItWas) {
  problem s = square(1024);
  const double dense = attention_flops(s);
  EXPECT_DOUBLE_EQ(dense, 4.0 * 2 * 4 * 1024 * 1024 * 64);
  s.causal = true;
  EXPECT_DOUBLE_EQ(attention_flops(s), dense / 2) << "plain causal keeps the halving convention";
  s.window_left = 255;  // each row sees at most 256 keys: the first 255 rows fewer
  const double pairs = 1024.0 * 256 - 255.0 * 256 / 2;
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 2 * 4 * 64 * pairs);
  s.kv_lens = "1024/512";  // each sequence's pairs at its own length
  s.kv_len = 1024;
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 4 * 64 * (visible_pairs(s, 1024) + visible_pairs(s, 512)));
}

TEST(Window, TheFieldsParseValidateAndDescribe) {
  problem s = square(512, true);
  s.window_left = 128;
  validate(s);
  EXPECT_NE(describe(s).find("causal window=128:0"), std::string::npos) << describe(s);
  EXPECT_EQ(parse_problem_key(problem_key(s)), s);
  s.window_left = -2;
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("window left -2 is not -1"), std::string::npos);
  s.window_left = 10, s.window_right = 5;
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("window right 5 with causal"), std::string::npos);
  s.causal = false, s.window_right = 0;
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("is the causal mask"), std::string::npos);
  canonicalize(s);
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(s.window_right, -1);
  validate(s);
}

TEST(Softcap, TheFieldParsesValidatesAndDescribes) {
  problem s = square(256);
  s.softcap = 50;
  validate(s);
  EXPECT_NE(describe(s).find("softcap50"), std::string::npos) << describe(s);
  s.softcap = 30.5;
  EXPECT_EQ(parse_problem_key(problem_key(s)).softcap, 30.5);
  for (double bad : {-1.0, double(INFINITY), double(NAN)}) {
    s.softcap = bad;
    EXPECT_NE(invalid_input_message([&] { validate(s); }).find("is not 0 (off) or a positive finite cap"),
              std::string::npos)
        << bad;
  }
}

TEST(WindowOptions, TheCliTakesAWindowAndASoftcap) {
  options o = testing::parsed({"--shape", "1,8,4096,128", "--causal", "--window", "1024,0", "--softcap", "50"});
  EXPECT_TRUE(o.problem.causal);
  EXPECT_EQ(o.problem.window_left, 1024);
  EXPECT_EQ(o.problem.window_right, -1) << "the causal form";
  EXPECT_EQ(o.problem.softcap, 50.0);
  o = testing::parsed({"--shape", "1,8,4096,128", "--window", "256,0"});
  EXPECT_TRUE(o.problem.causal) << "a right side of 0 is the causal mask";
  o = testing::parsed({"--shape", "1,8,4096,128", "--window", "-1,64"});
  EXPECT_FALSE(o.problem.causal);
  EXPECT_EQ(o.problem.window_left, -1);
  EXPECT_EQ(o.problem.window_right, 64);
}

TEST(WindowOptions, BadValuesAreRefusedNamingThem) {
  auto message = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"--shape", "1,8,512,64"});
    return invalid_input_message([&] { testing::parsed(args); });
  };
  EXPECT_NE(message({"--window", "-2,0"}).find("LEFT '-2' is not -1"), std::string::npos);
  EXPECT_NE(message({"--window", "5"}).find("expected LEFT,RIGHT"), std::string::npos);
  EXPECT_NE(message({"--window", "1,2,3"}).find("expected LEFT,RIGHT"), std::string::npos);
  EXPECT_NE(message({"--window", "4,x"}).find("RIGHT 'x'"), std::string::npos);
  EXPECT_NE(message({"--window", "4,8", "--causal"}).find("RIGHT must be 0 or -1"), std::string::npos);
  EXPECT_NE(message({"--softcap", "-3"}).find("invalid --softcap '-3'"), std::string::npos);
  EXPECT_NE(message({"--softcap", "inf"}).find("invalid --softcap 'inf'"), std::string::npos);
  EXPECT_NE(message({"--softcap", "fifty"}).find("invalid --softcap 'fifty'"), std::string::npos);
}

TEST(WindowFamilies, Fa2AndHopperTakeThemAndTheOthersSayWhy) {
  problem s = square(512, true);
  s.window_left = 100;
  for (const kernel_family* f : {&fa2_family(), &hopper_family()}) EXPECT_FALSE(problem_refusal(*f, s)) << f->name;
  for (const kernel_family* f : {&wgmma_family(), &mfma_family()}) {
    const auto why = problem_refusal(*f, s);
    ASSERT_TRUE(why) << f->name;
    EXPECT_NE(why->find("no sliding window (window 100,0): fa2 and hopper have"), std::string::npos) << *why;
  }
  s.window_left = -1, s.softcap = 50;
  EXPECT_FALSE(problem_refusal(hopper_family(), s));
  const auto why = problem_refusal(wgmma_family(), s);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no softcap (softcap 50): fa2 and hopper have"), std::string::npos) << *why;
}

// hopper's instantiation names WINDOW and SOFTCAP only as far as one is set: a dense problem's
// source (and binary) is the one measured before they existed.
TEST(WindowFamilies, HopperNamesTheFlagsOnlyWhenSet) {
  const tile_config c{128, 128, 12, 2, 7};
  problem s = square(512, true);
  auto config_args = [&] { return testing::hopper_config_args(c, s); };
  EXPECT_EQ(config_args(), "hopper_config<true, 64, 128, 128, 12, 2, true, 3, true");
  s.window_left = 256;
  EXPECT_EQ(config_args(), "hopper_config<true, 64, 128, 128, 12, 2, true, 3, true, true");
  s.softcap = 50;
  EXPECT_EQ(config_args(), "hopper_config<true, 64, 128, 128, 12, 2, true, 3, true, true, true");
  s.window_left = -1;
  EXPECT_EQ(config_args(), "hopper_config<true, 64, 128, 128, 12, 2, true, 3, true, false, true");
}

// On sm_90 a window or softcap is tuned with hopper, the family that takes them there.
TEST(WindowFamilies, OnHopperTheRunSearchesHopper) {
  problem s = square(4096, true);
  s.head_dim = 128, s.window_left = 1024, s.softcap = 50;
  family_run run;
  run.families = {"fa2", "wgmma", "hopper"};
  run.spaces = {fa2_family().default_space, wgmma_family().default_space, hopper_family().default_space};
  run.families_defaulted = true;
  EXPECT_EQ(searched_families(run, 9, 0, s), "hopper");
}

using testing::fake;

TEST(WindowParams, TheKernelGetsTheSidesAndTheCapInRawUnits) {
  problem s = square(1000);
  s.window_left = 100, s.window_right = 7, s.softcap = 50;
  const forward_tensors t{fake(0x1000), fake(0x2000), fake(0x3000), const_cast<void*>(fake(0x4000)),
                          static_cast<float*>(const_cast<void*>(fake(0x5000)))};
  attn_k::fwd_params p = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(p.window_left, 100);
  EXPECT_EQ(p.window_right, 7);
  const double scale = 1 / std::sqrt(64.0);
  EXPECT_FLOAT_EQ(p.softcap_in, float(scale / 50));
  EXPECT_FLOAT_EQ(p.softcap_out, float(50 / scale));
  s.causal = true, s.window_right = -1, s.window_left = 1 << 30;  // past every key: no limit
  p = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(p.window_left, -1);
  EXPECT_EQ(p.window_right, 0) << "causal is a right side of 0";
  s.softcap = 0;
  EXPECT_EQ(make_fwd_params(s, t, {}, {}, 0).softcap_out, 0.f);
}

// Softcap's polynomial (hopper's schedule bit 64) as the kernel evaluates it, in float: within
// 2.5e-4 of C tanh(s scale / C) (relative; tanh.approx.f32 is within 2^-11) wherever the kernel
// takes it (|s| < limit), and the cap there within 32 of 0 (what bounds a row's reference max).
TEST(SoftcapPolynomial, MatchesTanhWhereTheKernelTakesIt) {
  for (const double cap : {1.0, 5.0, 8.0, 30.0, 50.0, 51.0, 200.0, 1e4}) {
    for (const double scale : {1 / std::sqrt(64.0), 1 / std::sqrt(128.0), 0.5}) {
      SCOPED_TRACE(::testing::Message() << "softcap " << cap << ", scale " << scale);
      const softcap_polynomial poly = softcap_poly_for(cap, scale);
      ASSERT_GT(poly.limit, 0.f);
      EXPECT_NEAR(poly.limit * scale / cap, softcap_poly_limit(cap), 1e-6 * softcap_poly_limit(cap));
      EXPECT_LE(softcap_poly_limit(cap), softcap_poly_x);
      EXPECT_LE(cap * std::tanh(softcap_poly_limit(cap)), 32 * (1 + 1e-9));
      double worst = 0;
      for (int i = -1000; i <= 1000; ++i) {
        if (i == 0) continue;
        const float s = poly.limit * static_cast<float>(i) / 1000.f, y = s * s;
        const float got = s * std::fma(std::fma(poly.coefficients[2], y, poly.coefficients[1]), y, poly.coefficients[0]);
        const double want = cap * std::tanh(s * scale / cap) * M_LOG2E;  // exp2 of it: exp(C tanh(x))
        worst = std::max(worst, std::abs(got - want) / std::abs(want));
      }
      EXPECT_LT(worst, 2.5e-4);
      // The shorter form, where the kernel takes it (|s| < limit3).
      ASSERT_GT(poly.limit3, 0.f);
      EXPECT_LE(poly.limit3, poly.limit);  // equal where the cap of 32 bounds both (C > 94)
      EXPECT_NEAR(poly.limit3 * scale / cap, softcap_poly_limit(cap, softcap_poly3_x), 1e-6 * softcap_poly3_x);
      EXPECT_LE(cap * std::tanh(poly.limit3 * scale / cap), 32 * (1 + 1e-6));
      double worst3 = 0;
      for (int i = -1000; i <= 1000; ++i) {
        if (i == 0) continue;
        const float s = poly.limit3 * static_cast<float>(i) / 1000.f, y = s * s;
        const float got = s * std::fma(poly.coefficients3[1], y, poly.coefficients3[0]);
        const double want = cap * std::tanh(s * scale / cap) * M_LOG2E;
        worst3 = std::max(worst3, std::abs(got - want) / std::abs(want));
      }
      EXPECT_LT(worst3, 2.5e-4);
    }
  }
  const softcap_polynomial none = softcap_poly_for(0, 0.125);
  EXPECT_EQ(none.limit, 0.f);
  EXPECT_EQ(none.limit3, 0.f);
  EXPECT_EQ(none.coefficients[0], 0.f);
  // 50 is the largest C whose cap stays within 32 over |x| < 0.75; past it the range narrows.
  EXPECT_DOUBLE_EQ(softcap_poly_limit(50), softcap_poly_x);
  EXPECT_LT(softcap_poly_limit(51), softcap_poly_x);
}

// Rows of one query against three keys, worked by hand: q = (1, 0), keys (1,0), (0,1), (2,0),
// values (1,0), (0,1), (0,0); scale 1.
TEST(WindowReference, TheFloat64RowSeesOnlyItsWindow) {
  const float q[] = {1, 0}, k[] = {1, 0, 0, 1, 2, 0}, v[] = {1, 0, 0, 1, 0, 0};
  double out[2], lse = 0;
  // Keys 1..2: scores 0 and 2.
  attention_row_fp64(q, k, v, 3, 2, 2, 1.0, 1, 2, 0.0, out, &lse);
  const double e0 = std::exp(0.0), e2 = std::exp(2.0);
  EXPECT_NEAR(out[0], 0.0, 1e-15);
  EXPECT_NEAR(out[1], e0 / (e0 + e2), 1e-15);
  EXPECT_NEAR(lse, std::log(e0 + e2), 1e-15);
  // Key 0 alone.
  attention_row_fp64(q, k, v, 3, 2, 2, 1.0, 0, 0, 0.0, out, &lse);
  EXPECT_NEAR(out[0], 1.0, 1e-15);
  EXPECT_NEAR(lse, 1.0, 1e-15);
  // An empty window: zeros and -inf.
  attention_row_fp64(q, k, v, 3, 2, 2, 1.0, 2, 1, 0.0, out, &lse);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_TRUE(std::isinf(lse) && lse < 0);
  // Softcap 1 on all three: scores tanh(1), tanh(0), tanh(2), after the scale (0.5 here).
  attention_row_fp64(q, k, v, 3, 2, 2, 0.5, 0, 2, 1.0, out, &lse);
  const double a = std::exp(std::tanh(0.5)), b = std::exp(std::tanh(0.0)), c = std::exp(std::tanh(1.0));
  EXPECT_NEAR(out[0], a / (a + b + c), 1e-15);
  EXPECT_NEAR(out[1], b / (a + b + c), 1e-15);
  EXPECT_NEAR(lse, std::log(a + b + c), 1e-15);
}

TEST(WindowReference, TheWholeAttentionMasksEachRowsWindow) {
  problem s;
  s.batch = 1, s.heads = 1, s.kv_heads = 1, s.q_len = 4, s.kv_len = 6, s.head_dim = 2;
  s.window_left = 1, s.window_right = 1;  // diagonal i + 2: keys i+1 .. i+3
  EXPECT_EQ(first_visible_key(s, 0, 6), 1);
  EXPECT_EQ(last_visible_key(s, 0, 6), 3);
  EXPECT_EQ(last_visible_key(s, 3, 6), 5) << "clamped to the last key";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> q(8), k(12), v(12);
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = normal(rng);
  std::vector<double> lse;
  const auto out = attention_fp64(s, q, k, v, &lse);
  for (int64_t i = 0; i < 4; ++i) {
    double row[2], row_lse;
    const int64_t first = i + 1, last = std::min<int64_t>(i + 3, 5);
    attention_row_fp64(&q[i * 2], &k[first * 2], &v[first * 2], last - first + 1, 2, 2, 1 / std::sqrt(2.0),
                       last - first, row, &row_lse);
    EXPECT_DOUBLE_EQ(out[i * 2], row[0]);
    EXPECT_DOUBLE_EQ(out[i * 2 + 1], row[1]);
    EXPECT_DOUBLE_EQ(lse[i], row_lse);
  }
}

// fa2's WINDOW and SOFTCAP variants compile for sm_90a and sm_80, alone and together, with GQA,
// cross-attention and the decode axes (a window on a paged cache with lengths).
TEST(WindowCompile, Fa2VariantsCompile) {
  const temp_dir dir("attn-tune-window-compile");
  const compile_cache cache(dir.path().string());
  struct variant {
    int64_t left, right;
    bool causal;
    double softcap;
  };
  for (const variant& w : {variant{128, -1, true, 0}, variant{100, 50, false, 0}, variant{-1, -1, false, 50},
                           variant{64, -1, true, 30}}) {
    for (const char* arch : {"sm_90a", "sm_80"}) {
      problem s = square(1000, w.causal);
      s.kv_len = 1200, s.head_dim = 128, s.window_left = w.left, s.window_right = w.right, s.softcap = w.softcap;
      tune_options t;
      t.family = "fa2";
      t.configs = {{128, 64, 4, 2}, {64, 64, 4, 3}, {64, 32, 4, 2, 0, 3, 1}};
      const tune_result r = compile_only(s, arch, cache, t);
      ASSERT_EQ(r.records.size(), 3u);
      for (const auto& rec : r.records)
        EXPECT_EQ(rec.status, status::compiled) << arch << " " << describe(s) << " " << name(rec.config) << ": "
                                                << rec.message;
    }
  }
}

// Every variant of hopper's default space that its pruner keeps compiles for sm_90a without
// spills, for each form: a causal window, both sides, softcap alone and with a window, at D = 64,
// 128 and 256 (softcap and a window cost registers: the pruner's margin grows with them).
struct hopper_variant_case {
  const char* label;
  int64_t d;
  bool causal;
  int64_t left, right;
  double softcap;
};
void PrintTo(const hopper_variant_case& c, std::ostream* os) { *os << c.label; }
class hopper_variant_compile : public ::testing::TestWithParam<hopper_variant_case> {};

TEST_P(hopper_variant_compile, every_kept_variant_compiles_without_spills) {
  const hopper_variant_case& v = GetParam();
  problem s = square(4096, v.causal);
  s.head_dim = v.d, s.window_left = v.left, s.window_right = v.right, s.softcap = v.softcap;
  canonicalize(s);
  validate(s);
  testing::expect_hopper_space_compiles_without_spills(s);
  if (v.softcap > 0) testing::expect_hopper_space_compiles_without_spills(s, attn_k::schedule_softcap_poly);
}

// Trimmed warpgroups (schedule bit 128) on every schedule of the default space: causal at D = 64,
// 128 and 256, and a window at 256 (its margin keeps ptxas from spilling).
TEST(HopperTrim, EveryKeptVariantCompilesWithoutSpills) {
  for (const auto& [d, left] : {std::pair<int64_t, int64_t>{64, -1}, {128, -1}, {256, 1024}}) {
    SCOPED_TRACE(::testing::Message() << "D " << d << ", window " << left);
    problem s = square(4096, true);
    s.head_dim = d, s.window_left = left;
    canonicalize(s);
    validate(s);
    testing::expect_hopper_space_compiles_without_spills(s, attn_k::schedule_trim);
  }
}

// The half-width first tile (schedule bit 256) on every schedule of the default space that has the
// overlap, beside a window's left edge at D = 64, 128 and 256 (causal or both sides): no spills,
// and no wgmma that ptxas serializes (its message would say so).
TEST(HopperHalfFirst, EveryKeptVariantCompilesWithoutSpills) {
  for (const auto& [d, causal, right] : {std::tuple<int64_t, bool, int64_t>{64, false, 256}, {128, true, 0},
                                         {256, true, 0}}) {
    SCOPED_TRACE(::testing::Message() << "D " << d);
    problem s = square(4096, causal);
    s.head_dim = d, s.window_left = causal ? 1024 : 256, s.window_right = right;
    canonicalize(s);
    validate(s);
    testing::expect_hopper_space_compiles_without_spills(s, attn_k::schedule_half_first);
  }
}

INSTANTIATE_TEST_SUITE_P(
    hopper, hopper_variant_compile,
    ::testing::Values(hopper_variant_case{"d128_causal_window_softcap", 128, true, 1024, -1, 50},
                      hopper_variant_case{"d64_both_sides", 64, false, 256, 256, 0},
                      hopper_variant_case{"d64_softcap", 64, false, -1, -1, 50},
                      hopper_variant_case{"d256_causal_window", 256, true, 1024, -1, 0},
                      hopper_variant_case{"d96_softcap", 96, false, -1, -1, 50},
                      hopper_variant_case{"d256_causal_softcap", 256, true, -1, -1, 50}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn
