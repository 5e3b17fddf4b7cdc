// Packed variable-length batches without a GPU (issue 23, item 5): the fields seqlens and
// kv_seqlens (validation and its messages, the key), the flops and bytes they change, the CLI's
// --seqlens and --kv-seqlens, which families take them, the kernel parameters (batch strides 0,
// the offsets required), the float64 reference against each sequence attended on its own (so no
// row sees another sequence's keys, and an empty sequence gives nothing or zeros), the space, and
// that fa2's packed variants compile without spills.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cli/options.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "codegen/family_hopper.hpp"
#include "codegen/kernel_args.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "family_checks.hpp"
#include "hopper_compile_checks.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"
#include "verify/cpu_reference.hpp"

namespace attn {
namespace {

using attn::testing::fake;
using attn::testing::invalid_input_message;

// Three sequences of 3, 0 and 5 queries (the longest may be 8), self-attention.
problem packed(const char* lengths = "3/0/5", int64_t n = 8) {
  problem s;
  s.batch = 3, s.heads = 4, s.kv_heads = 2, s.q_len = s.kv_len = n, s.head_dim = 64;
  s.seqlens = lengths;
  return s;
}

TEST(Varlen, TheFieldsValidateAndDescribe) {
  problem s = packed();
  validate(s);
  EXPECT_TRUE(is_varlen(s));
  EXPECT_EQ(q_lengths(s), (std::vector<int64_t>{3, 0, 5}));
  EXPECT_EQ(kv_lengths(s), (std::vector<int64_t>{3, 0, 5})) << "the keys' lengths are the queries' by default";
  EXPECT_EQ(cumulative_lengths(q_lengths(s)), (std::vector<int64_t>{0, 3, 3, 8}));
  EXPECT_EQ(q_rows(s), 8);
  EXPECT_EQ(kv_rows(s), 8);
  EXPECT_NE(describe(s).find("seqlens=3/0/5"), std::string::npos) << describe(s);
  EXPECT_EQ(parse_problem_key(problem_key(s)), s);
  s.kv_seqlens = "4/1/9", s.kv_len = 9;
  validate(s);
  EXPECT_EQ(kv_lengths(s), (std::vector<int64_t>{4, 1, 9}));
  EXPECT_EQ(kv_rows(s), 14);
  EXPECT_EQ(parse_problem_key(problem_key(s)), s);
  // A distribution: B draws in [LO, HI], the same on every run.
  problem u = packed("uniform:100:8192", 8192);
  u.batch = 32;
  const auto a = q_lengths(u);
  ASSERT_EQ(a.size(), 32u);
  EXPECT_EQ(a, q_lengths(u));
  for (int64_t n : a) EXPECT_TRUE(n >= 100 && n <= 8192) << n;
  EXPECT_NE(a.front(), a.back());
}

TEST(Varlen, BadLengthsAreRefusedNamingThem) {
  auto message = [](problem s) { return invalid_input_message([&] { validate(s); }); };
  EXPECT_NE(message(packed("3/5")).find("seqlens '3/5' gives 2 lengths for a batch of 3"), std::string::npos);
  EXPECT_NE(message(packed("3/0/9")).find("seqlens '3/0/9': length 9 is not in [0, q_len 8]"), std::string::npos);
  EXPECT_NE(message(packed("3/x/5")).find("'x' is not a length"), std::string::npos);
  EXPECT_NE(message(packed("uniform:5:9")).find("needs 0 <= LO <= HI <= q_len 8"), std::string::npos);
  EXPECT_NE(message(packed("0/0/0")).find("no rows"), std::string::npos) << message(packed("0/0/0"));
  problem s = packed();
  s.kv_len = 9;
  EXPECT_NE(message(s).find("needs the keys' lengths (kv_seqlens)"), std::string::npos) << message(s);
  s.kv_seqlens = "1/2";
  EXPECT_NE(message(s).find("kv_seqlens '1/2' gives 2 lengths for a batch of 3"), std::string::npos) << message(s);
  problem lonely;
  lonely.batch = 2, lonely.q_len = lonely.kv_len = 8, lonely.kv_seqlens = "1/2";
  EXPECT_NE(message(lonely).find("kv_seqlens '1/2' without seqlens"), std::string::npos);
  s = packed();
  s.kv_lens = "1/2/3";
  EXPECT_NE(message(s).find("with kv_lens '1/2/3'"), std::string::npos) << message(s);
  s = packed();
  s.page_size = 16;
  EXPECT_NE(message(s).find("with a paged cache"), std::string::npos) << message(s);
  s = packed("given");
  validate(s);  // the library's lengths come with the call
  s.kv_seqlens = "1/2/3";
  EXPECT_NE(message(s).find("given for both"), std::string::npos) << message(s);
  EXPECT_NE(invalid_input_message([] { q_lengths(packed("given")); }).find("cu_seqlens"), std::string::npos);
}

TEST(Varlen, FlopsAndBytesCountEachSequencesOwnRows) {
  problem s = packed();
  // 4 D per visible pair, each sequence its own square: 9 + 0 + 25 pairs per head.
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 64 * 4 * (9 + 0 + 25));
  s.causal = true;
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 64 * 4 * (9 + 0 + 25) / 2) << "causal keeps the halving convention";
  // A window counts each sequence's visible pairs exactly: left 1 with causal, a row sees itself
  // and the key before it: 1 + 2 + 2 = 5 and 1 + 2 * 4 = 9.
  s.window_left = 1;
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 64 * 4 * (5 + 0 + 9));
  s = packed();
  s.kv_seqlens = "4/1/9", s.kv_len = 9;
  EXPECT_DOUBLE_EQ(attention_flops(s), 4.0 * 64 * 4 * (3 * 4 + 0 * 1 + 5 * 9));
  EXPECT_EQ(q_bytes(s), 8 * 4 * 64 * 2);
  EXPECT_EQ(o_bytes(s), q_bytes(s));
  EXPECT_EQ(kv_bytes(s), 14 * 2 * 64 * 2);
  EXPECT_EQ(kv_read_bytes(s), kv_bytes(s));
  EXPECT_EQ(lse_bytes(s), 8 * 4 * 4) << "[H, total queries]";
  EXPECT_EQ(materialized_extra_bytes(s), 4 * (3 * 4 + 0 + 5 * 9) * (4 + 2));
  EXPECT_EQ(moved_bytes(s), q_bytes(s) + o_bytes(s) + kv_bytes(s) + v_bytes(s) + lse_bytes(s));
}

TEST(VarlenOptions, TheCliTakesSeqlens) {
  options o = testing::parsed({"--shape", "3,4,8,64", "--kv-heads", "2", "--seqlens", "3,0,5", "--causal"});
  EXPECT_EQ(o.problem.seqlens, "3/0/5");
  EXPECT_EQ(o.problem.q_len, 8);
  EXPECT_EQ(o.problem.kv_len, 8);
  o = testing::parsed({"--shape", "3,4,8,64", "--seqlens", "3,0,5", "--kv-seqlens", "4,1,9"});
  EXPECT_EQ(o.problem.kv_seqlens, "4/1/9");
  EXPECT_EQ(o.problem.kv_len, 9) << "the longest key length when --kv-len is not given";
  EXPECT_NE(default_out_path("NVIDIA H200", o.problem).find("-varlen"), std::string::npos);
  auto message = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"--shape", "3,4,8,64"});
    return invalid_input_message([&] { testing::parsed(args); });
  };
  EXPECT_NE(message({"--seqlens", "3;5"}).find("invalid --seqlens '3;5': expected lengths L1,L2,..."),
            std::string::npos);
  EXPECT_NE(message({"--seqlens", "3,5"}).find("gives 2 lengths for a batch of 3"), std::string::npos);
  EXPECT_NE(message({"--seqlens", "3,5,9"}).find("length 9 is not in [0, q_len 8]"), std::string::npos);
  EXPECT_NE(message({"--kv-seqlens", "3,5,1"}).find("without seqlens"), std::string::npos);
}

TEST(VarlenFamilies, Fa2AndHopperTakeIt) {
  const problem s = packed();
  EXPECT_FALSE(problem_refusal(fa2_family(), s));
  EXPECT_FALSE(problem_refusal(hopper_family(), s));
  for (const kernel_family* f : {&wgmma_family(), &mfma_family()}) {
    const auto why = problem_refusal(*f, s);
    ASSERT_TRUE(why) << f->name;
    EXPECT_NE(why->find("does not read a packed variable-length batch (seqlens 3/0/5): fa2 and hopper do"),
              std::string::npos)
        << *why;
  }
}

TEST(VarlenSpace, NoSplitsOrPackedGqa) {
  const problem s = packed("1/1/1", 1024);  // decode-sized rows: a dense problem would get the decode axes
  const search_space space = for_problem(fa2_family().default_space, s, 132);
  EXPECT_EQ(space.splits, std::vector<int>{1});
  EXPECT_EQ(space.pack_gqa, std::vector<int>{0});
  const resource_limits limits{};
  tile_config c{64, 64, 4, 2};
  c.splits = 4;
  auto why = fa2_family().reject_reason(c, s, limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no split-KV"), std::string::npos) << *why;
  c.splits = 1, c.pack_gqa = 1;
  why = fa2_family().reject_reason(c, s, limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("packed GQA"), std::string::npos) << *why;
}

TEST(VarlenParams, PackedTensorsAndTheirOffsets) {
  problem s = packed();
  const int* cu = static_cast<const int*>(fake(0x6000));
  forward_tensors t{fake(0x1000), fake(0x2000), fake(0x3000), const_cast<void*>(fake(0x4000)),
                    static_cast<float*>(const_cast<void*>(fake(0x5000)))};
  EXPECT_NE(invalid_input_message([&] { make_fwd_params(s, t, {}, {}, 0); }).find("needs cu_seqlens_q and cu_seqlens_k"),
            std::string::npos);
  t.cu_seqlens_q = t.cu_seqlens_k = cu;
  t.total_q = q_rows(s), t.total_kv = kv_rows(s);
  attn_k::fwd_params p = make_fwd_params(s, t, {}, {}, 0);  // bhsd: [H, total, D]
  EXPECT_EQ(p.q_batch_stride, 0);
  EXPECT_EQ(p.q_head_stride, 8 * 64);
  EXPECT_EQ(p.q_row_stride, 64);
  EXPECT_EQ(p.kv_batch_stride, 0);
  EXPECT_EQ(p.kv_head_stride, 8 * 64);
  EXPECT_EQ(p.cu_seqlens_q, cu);
  EXPECT_EQ(p.total_q, 8);
  EXPECT_EQ(p.q_len, 8) << "the longest sequence (max_seqlen_q)";
  s.layout = layout::bshd;  // [total, H, D]
  p = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(p.q_row_stride, 4 * 64);
  EXPECT_EQ(p.q_head_stride, 64);
  EXPECT_EQ(p.kv_row_stride, 2 * 64);
  // A batch stride is refused, not ignored: the sequences are rows of one tensor.
  EXPECT_NE(invalid_input_message([&] { make_fwd_params(s, t, {8, 64, 256}, {}, 0); }).find("batch stride 8"),
            std::string::npos);
  t.total_q = 0;
  EXPECT_NE(invalid_input_message([&] { make_fwd_params(s, t, {}, {}, 0); }).find("total_q 0"), std::string::npos);
  // Unpacked problems read none of it.
  problem dense = packed();
  dense.seqlens.clear();
  t.total_q = 8;
  p = make_fwd_params(dense, t, {}, {}, 0);
  EXPECT_EQ(p.cu_seqlens_q, nullptr);
}

// The packed reference is each sequence attended on its own: sequence b's rows of O and LSE equal
// a dense one-sequence problem's on its own rows of Q, K and V, in both layouts, causal (bottom-
// right per sequence) with a window, cross-attention with kv_seqlens, empty sequences included.
TEST(VarlenReference, EachSequenceIsAttendedOnItsOwn) {
  for (layout l : {layout::bhsd, layout::bshd})
    for (bool causal : {false, true}) {
      problem s = packed("3/0/5/6", 6);
      s.batch = 4, s.layout = l, s.causal = causal, s.head_dim = 4, s.kv_len = 7;
      s.kv_seqlens = "4/2/7/0";
      if (causal) s.window_left = 2;
      std::mt19937 rng(11);
      std::normal_distribution<float> normal;
      std::vector<float> q(q_rows(s) * s.heads * 4), k(kv_rows(s) * s.kv_heads * 4), v(kv_rows(s) * s.kv_heads * 4);
      for (auto* x : {&q, &k, &v})
        for (auto& e : *x) e = normal(rng);
      std::vector<double> lse;
      const auto out = attention_fp64(s, q, k, v, &lse);
      ASSERT_EQ(out.size(), q.size());
      const auto qs = cumulative_lengths(q_lengths(s)), ks = cumulative_lengths(kv_lengths(s));
      for (int64_t b = 0; b < s.batch; ++b) {
        problem one = s;
        one.batch = 1, one.seqlens.clear(), one.kv_seqlens.clear();
        one.q_len = qs[b + 1] - qs[b], one.kv_len = ks[b + 1] - ks[b];
        if (one.q_len == 0) continue;  // no rows to compare
        std::vector<float> q1, k1, v1;
        for (int64_t h = 0; h < s.heads; ++h)
          for (int64_t i = 0; i < one.q_len; ++i)
            for (int c = 0; c < 4; ++c) q1.push_back(q[row_offset(s, false, 4, b, h, i, qs) + c]);
        for (int64_t h = 0; h < s.kv_heads; ++h)
          for (int64_t j = 0; j < one.kv_len; ++j)
            for (int c = 0; c < 4; ++c) {
              k1.push_back(k[row_offset(s, true, 4, b, h, j, ks) + c]);
              v1.push_back(v[row_offset(s, true, 4, b, h, j, ks) + c]);
            }
        // q1, k1, v1 are in bhsd order: so is the dense problem.
        one.layout = layout::bhsd;
        if (one.kv_len == 0) {  // no key: zeros and an LSE of -inf
          for (int64_t h = 0; h < s.heads; ++h)
            for (int64_t i = 0; i < one.q_len; ++i) {
              for (int c = 0; c < 4; ++c) EXPECT_EQ(out[row_offset(s, false, 4, b, h, i, qs) + c], 0.0);
              EXPECT_TRUE(std::isinf(lse[h * q_rows(s) + qs[b] + i]) && lse[h * q_rows(s) + qs[b] + i] < 0);
            }
          continue;
        }
        std::vector<double> lse1;
        const auto o1 = attention_fp64(one, q1, k1, v1, &lse1);
        for (int64_t h = 0; h < s.heads; ++h)
          for (int64_t i = 0; i < one.q_len; ++i) {
            for (int c = 0; c < 4; ++c)
              EXPECT_DOUBLE_EQ(out[row_offset(s, false, 4, b, h, i, qs) + c], o1[(h * one.q_len + i) * 4 + c])
                  << to_string(l) << " causal " << causal << " b" << b << " h" << h << " i" << i;
            EXPECT_DOUBLE_EQ(lse[h * q_rows(s) + qs[b] + i], lse1[h * one.q_len + i]);
          }
      }
    }
}

// By hand: two sequences of one query and two keys each, d 2, scale 1/sqrt(2); the second
// sequence's query must not see the first's keys.
TEST(VarlenReference, ABoundaryIsNotCrossed) {
  problem s;
  s.batch = 2, s.heads = s.kv_heads = 1, s.q_len = 1, s.kv_len = 2, s.head_dim = 2, s.layout = layout::bshd;
  s.seqlens = "1/1", s.kv_seqlens = "2/2";
  const std::vector<float> q = {1, 0, 0, 1}, k = {1, 0, 0, 0, 0, 1, 0, 0}, v = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> lse;
  const auto out = attention_fp64(s, q, k, v, &lse);
  const double sc = 1 / std::sqrt(2.0);
  // Sequence 0: scores sc, 0 against values (1,2), (3,4); sequence 1: scores sc, 0 against (5,6), (7,8).
  const double w = std::exp(sc) / (std::exp(sc) + 1);
  EXPECT_NEAR(out[0], w * 1 + (1 - w) * 3, 1e-14);
  EXPECT_NEAR(out[1], w * 2 + (1 - w) * 4, 1e-14);
  EXPECT_NEAR(out[2], w * 5 + (1 - w) * 7, 1e-14);
  EXPECT_NEAR(out[3], w * 6 + (1 - w) * 8, 1e-14);
  EXPECT_NEAR(lse[1], std::log(std::exp(sc) + 1), 1e-14);
}

// fa2 compiles its packed variants for sm_90a and sm_80 (causal, a window, softcap, dv != d, a head
// dim that is not a multiple of 16 and one that is not of 8), spilling no more than the dense
// kernel of the same tile does. Seen (CUDA 13.0, sm_90a): the 192-accumulator tiles at D=128
// (m128_n64_w4, m256_n64_w8) hold 253-255 registers dense and spill 124 bytes there when not
// causal (156 with the bulk loader); packed, 144 (196 bulk) not causal and 24 causal (where dense
// spills none): at most 40 bytes more. The sequence's own
// lengths and first rows are registers where the dense kernel reads its lengths from the
// parameters. Every other tile spills nothing, packed or not.
struct varlen_case {
  const char* label;
  int64_t d, dv;
  bool causal;
  const char* arch;
  int64_t window_left = -1;
  double softcap = 0;
};
void PrintTo(const varlen_case& c, std::ostream* os) { *os << c.label; }
class varlen_compile : public ::testing::TestWithParam<varlen_case> {};

TEST_P(varlen_compile, fa2_variants_compile_spilling_no_more_than_dense) {
  const varlen_case& c = GetParam();
  problem s = packed("uniform:1:1000", 1000);
  s.batch = 8, s.head_dim = c.d, s.head_dim_v = c.dv, s.causal = c.causal, s.window_left = c.window_left;
  s.softcap = c.softcap;
  validate(s);
  problem dense = s;
  dense.seqlens.clear();
  const temp_dir dir("attn-tune-varlen-compile");
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = "fa2";
  t.configs = {{128, 64, 4, 2}, {64, 64, 4, 2}, {128, 128, 8, 2}, {256, 64, 8, 2}, {128, 32, 4, 2}};
  if (std::string(c.arch) == "sm_90a" && c.d % 16 == 0) t.configs.push_back({128, 64, 4, 2, 1});  // bulk copies
  const tune_result r = compile_only(s, c.arch, cache, t), d = compile_only(dense, c.arch, cache, t);
  ASSERT_EQ(r.records.size(), d.records.size());
  int compiled = 0;
  for (size_t i = 0; i < r.records.size(); ++i) {
    const auto& rec = r.records[i];
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.status, status::compiled) << describe(s) << " " << name(rec.config) << ": " << rec.message;
    const bool known = c.d == 128 && (name(rec.config) == "m128_n64_w4_s2" || name(rec.config) == "m256_n64_w8_s2" ||
                                      name(rec.config) == "m128_n64_w4_s2_k1");
    EXPECT_LE(rec.spill_bytes, d.records[i].spill_bytes + (known ? 40 : 0))
        << name(rec.config) << " spills " << rec.spill_bytes << " bytes, dense " << d.records[i].spill_bytes;
    if (!known) EXPECT_EQ(rec.spill_bytes, 0) << name(rec.config);
    ++compiled;
  }
  EXPECT_GE(compiled, 2) << r.pruning;
}

INSTANTIATE_TEST_SUITE_P(fa2, varlen_compile,
                         ::testing::Values(varlen_case{"d128_sm90a", 128, 0, false, "sm_90a"},
                                           varlen_case{"d128_causal_sm90a", 128, 0, true, "sm_90a"},
                                           varlen_case{"d128_causal_sm80", 128, 0, true, "sm_80"},
                                           varlen_case{"d64_window_softcap_sm90a", 64, 0, true, "sm_90a", 256, 50},
                                           varlen_case{"d192_dv128_sm90a", 192, 128, true, "sm_90a"},
                                           varlen_case{"d40_sm90a", 40, 0, false, "sm_90a"},
                                           varlen_case{"d59_causal_sm80", 59, 0, true, "sm_80"}),
                         [](const auto& info) { return std::string(info.param.label); });

// hopper's instantiation names VARLEN (its last flag) only for a packed problem, after WINDOW and
// SOFTCAP: a dense problem's source is the one measured before it existed.
TEST(VarlenFamilies, HopperNamesVarlenLastAndOnlyWhenPacked) {
  const tile_config c{128, 128, 12, 2, 7};
  problem s = packed("300/0/512", 512);
  s.head_dim = 128, s.causal = true;
  auto config_args = [&] { return testing::hopper_config_args(c, s); };
  EXPECT_EQ(config_args(), "hopper_config<true, 128, 128, 128, 12, 2, true, 3, true, false, false, true");
  s.softcap = 50;
  EXPECT_EQ(config_args(), "hopper_config<true, 128, 128, 128, 12, 2, true, 3, true, false, true, true");
  s.seqlens.clear();
  EXPECT_EQ(config_args(), "hopper_config<true, 128, 128, 128, 12, 2, true, 3, true, false, true");
  s.softcap = 0;
  EXPECT_EQ(config_args(), "hopper_config<true, 128, 128, 128, 12, 2, true, 3, true");
}

// Lengths "given" (the C API's call) are checked against the longest sequence's rows, not the
// bound B x N: 1024 sequences of up to 131072 rows at H 32, D 128 would span 2^40 bytes.
TEST(VarlenFamilies, HopperTakesGivenLengthsWhoseBoundWouldSpan2To40) {
  problem s = packed("given", 131072);
  s.batch = 1024, s.heads = s.kv_heads = 32, s.head_dim = 128, s.kv_seqlens = "given";
  for (layout l : {layout::bshd, layout::bhsd}) {
    s.layout = l;
    EXPECT_FALSE(tma_stride_problem(s)) << *tma_stride_problem(s);
  }
}

// A packed batch's tiles span its longest sequence's query blocks for every sequence: past 2^31
// the kernel's tile index would wrap, so hopper refuses it by name (and fa2 a grid past 65535
// sequences in z).
TEST(VarlenFamilies, TileCountsPast32BitsAndGridsPast65535AreRefused) {
  problem s = packed("given", 262144);
  s.batch = 32768, s.heads = s.kv_heads = 32, s.head_dim = 128, s.kv_seqlens = "given";
  const resource_limits limits{};  // sm_90
  const tile_config c{128, 128, 12, 2, 7};
  auto why = hopper_family().reject_reason(c, s, limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("2147483648 tiles (2048 query blocks of 128 rows x 32768 batch entries x 32 heads) exceed "
                      "2^31"),
            std::string::npos)
      << *why;
  s.batch = 32767;
  EXPECT_FALSE(tile_count_problem(s, 128));
  s.batch = 70000, s.q_len = s.kv_len = 1024;
  why = fa2_family().reject_reason(tile_config{64, 64, 4, 2}, s, limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("batch 70000 exceeds the grid's 65535 blocks in z"), std::string::npos) << *why;
}

// Every variant of hopper's default space that its pruner keeps compiles for sm_90a without
// spills on a packed batch (the sequence's rows and lengths are registers the dense kernel does
// not hold), causal or not, at D = 64, 96, 128 and 256, with a window and softcap.
struct hopper_varlen_case {
  const char* label;
  int64_t d;
  bool causal;
  int64_t window_left;
  double softcap;
};
void PrintTo(const hopper_varlen_case& c, std::ostream* os) { *os << c.label; }
class hopper_varlen_compile : public ::testing::TestWithParam<hopper_varlen_case> {};

TEST_P(hopper_varlen_compile, every_kept_variant_compiles_without_spills) {
  const hopper_varlen_case& v = GetParam();
  problem s = packed("uniform:128:4096", 4096);
  s.batch = 8, s.head_dim = v.d, s.causal = v.causal, s.window_left = v.window_left, s.softcap = v.softcap;
  validate(s);
  testing::expect_hopper_space_compiles_without_spills(s);
}

INSTANTIATE_TEST_SUITE_P(hopper, hopper_varlen_compile,
                         ::testing::Values(hopper_varlen_case{"d128", 128, false, -1, 0},
                                           hopper_varlen_case{"d128_causal", 128, true, -1, 0},
                                           hopper_varlen_case{"d64_causal_window_softcap", 64, true, 1024, 50},
                                           hopper_varlen_case{"d256_causal", 256, true, -1, 0},
                                           hopper_varlen_case{"d96", 96, false, -1, 0}),
                         [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn
