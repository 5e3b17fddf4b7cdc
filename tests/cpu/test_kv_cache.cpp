// A paged K/V cache and per-sequence K/V lengths without a GPU: the problem's page_size and kv_lens
// (parsing, validation and its messages, the lengths they expand to), the CLI options, which
// families take them, the kernel parameters of a paged cache, the page table, the float64
// reference with lengths (test_decode.cpp compiles the decode space with both).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "codegen/kernel_args.hpp"
#include "core/problem.hpp"
#include "family_checks.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"
#include "verify/cpu_reference.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {
namespace {

using attn::testing::invalid_input_message;

problem cache_problem(int64_t batch = 4, int64_t kv_len = 1000) {
  problem s;
  s.batch = batch, s.heads = 8, s.kv_heads = 2, s.q_len = 1, s.kv_len = kv_len, s.head_dim = 128;
  return s;
}

TEST(KvLens, AListGivesEachSequenceItsLength) {
  problem s = cache_problem();
  s.kv_lens = "0/1/999/1000";
  EXPECT_EQ(kv_lengths(s), (std::vector<int64_t>{0, 1, 999, 1000}));
  s.kv_lens = "";
  EXPECT_EQ(kv_lengths(s), std::vector<int64_t>(4, 1000));
}

TEST(KvLens, UniformDrawsTheSameLengthsEveryTimeWithinItsBounds) {
  problem s = cache_problem(64, 4096);
  s.kv_lens = "uniform:100:4000";
  const auto a = kv_lengths(s), b = kv_lengths(s);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 64u);
  for (int64_t n : a) {
    EXPECT_GE(n, 100);
    EXPECT_LE(n, 4000);
  }
  EXPECT_GT(*std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end()), 1000) << "not spread";
  s.kv_lens = "uniform:7:7";
  EXPECT_EQ(kv_lengths(s), std::vector<int64_t>(64, 7));
}

TEST(KvLens, BadListsAreRefusedNamingTheValue) {
  problem s = cache_problem();
  s.kv_lens = "1/2/3";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("gives 3 lengths for a batch of 4"), std::string::npos);
  s.kv_lens = "1/2/3/1001";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("length 1001 is not in [0, kv_len 1000]"),
            std::string::npos);
  s.kv_lens = "1/2/x/4";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("'x' is not a length"), std::string::npos);
  s.kv_lens = "1/-2/3/4";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("length -2"), std::string::npos);
  s.kv_lens = "uniform:10:2000";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("HI <= kv_len 1000"), std::string::npos);
  s.kv_lens = "uniform:20:10";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("uniform:20:10"), std::string::npos);
  s.kv_lens = "given";
  validate(s);  // the library's: lengths with the call
  EXPECT_NE(invalid_input_message([&] { kv_lengths(s); }).find("come with the call"), std::string::npos);
}

// A huge batch is checked before anything of its size is made: the fuzzer's
// "888888141,64,6,64" ran out of memory when validation expanded B lengths it did not need.
TEST(KvLens, AHugeBatchIsRefusedBeforeItsLengthsAreDrawn) {
  problem s = cache_problem(888888141, 6);
  s.heads = 64, s.kv_heads = 64, s.q_len = 6, s.head_dim = 64;
  validate(s);  // no kv_lens: nothing per sequence is made
  s.kv_lens = "uniform:1:6";
  EXPECT_NE(invalid_input_message([&] { validate(s); }).find("a batch of at most 1048576"), std::string::npos);
  s.batch = max_kv_lens_batch;
  validate(s);
}

TEST(PageSize, OnlyPowersOfTwoUpToTheLimitAreAccepted) {
  problem s = cache_problem();
  for (int64_t ok : {0, 1, 2, 16, 256, 1024}) {
    s.page_size = ok;
    EXPECT_NO_THROW(validate(s)) << ok;
  }
  for (int64_t bad : {3, 24, 2048, -16}) {
    s.page_size = bad;
    const std::string m = invalid_input_message([&] { validate(s); });
    EXPECT_NE(m.find(fmt::format("page size {} is not 0", bad)), std::string::npos) << m;
    EXPECT_NE(m.find("power of two in [1, 1024]"), std::string::npos) << m;
  }
  s.page_size = 16;
  EXPECT_EQ(pages_per_sequence(s), 63);  // ceil(1000 / 16)
}

TEST(KvLens, FlopsAndBytesCountEachSequencesOwnKeys) {
  problem s = cache_problem();
  const double dense = attention_flops(s);
  s.kv_lens = "0/1/999/1000";
  EXPECT_DOUBLE_EQ(attention_flops(s), dense * 2000.0 / 4000.0);
  EXPECT_EQ(kv_read_bytes(s), 2000 * 2 * 128 * 2);
  EXPECT_EQ(kv_bytes(s), 4000 * 2 * 128 * 2);  // what is allocated: the capacity
}

TEST(KvCacheOptions, TheCliTakesListsAndPageSizes) {
  options o = testing::parsed({"--shape", "3,8,1,128", "--kv-heads", "2", "--kv-lens", "5,0,700", "--page-size", "16"});
  EXPECT_EQ(o.problem.kv_lens, "5/0/700");
  EXPECT_EQ(o.problem.kv_len, 700) << "the capacity defaults to the longest";
  EXPECT_EQ(o.problem.page_size, 16);
  o = testing::parsed({"--shape", "3,8,1,128", "--kv-len", "4096", "--kv-lens", "uniform:1:4000"});
  EXPECT_EQ(o.problem.kv_len, 4096);
  EXPECT_EQ(o.problem.kv_lens, "uniform:1:4000");
}

TEST(KvCacheOptions, BadValuesAreRefusedNamingThem) {
  EXPECT_NE(invalid_input_message([] { testing::parsed({"--shape", "2,8,1,128", "--page-size", "24"}); })
                .find("page size 24"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { testing::parsed({"--shape", "2,8,1,128", "--page-size", "0"}); })
                .find("--page-size 0"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { testing::parsed({"--shape", "2,8,1,128", "--kv-lens", "4;5"}); })
                .find("invalid --kv-lens '4;5'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { testing::parsed({"--shape", "2,8,1,128", "--kv-lens", "4,5,6"}); })
                .find("gives 3 lengths for a batch of 2"),
            std::string::npos);
  EXPECT_NE(invalid_input_message(
                [] { testing::parsed({"--shape", "2,8,1,128", "--kv-len", "100", "--kv-lens", "4,500"}); })
                .find("length 500 is not in [0, kv_len 100]"),
            std::string::npos);
}

TEST(KvCacheFamilies, Fa2AndHopperTakeThemAndTheOthersSayWhy) {
  problem s = cache_problem();
  s.page_size = 64;
  EXPECT_FALSE(problem_refusal(fa2_family(), s));
  EXPECT_FALSE(problem_refusal(hopper_family(), s));
  for (const kernel_family* f : {&wgmma_family(), &mfma_family()}) {
    const auto why = problem_refusal(*f, s);
    ASSERT_TRUE(why) << f->name;
    EXPECT_NE(why->find("paged K/V cache (page size 64): fa2 and hopper do"), std::string::npos) << *why;
  }
  s.page_size = 0;
  s.kv_lens = "1/2/3/4";
  EXPECT_FALSE(problem_refusal(hopper_family(), s));
  const auto why = problem_refusal(wgmma_family(), s);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("kv_lens 1/2/3/4"), std::string::npos) << *why;
  // Refused before anything compiles, naming the reason.
  const temp_dir dir("attn-tune-kv-cache");
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = "wgmma";
  t.space = wgmma_family().default_space;
  EXPECT_NE(invalid_input_message([&] { compile_only(s, "sm_90a", cache, t); }).find("fa2 and hopper do"),
            std::string::npos);
  // hopper copies a page's rows in TMA boxes of 16 rows or more: smaller pages are fa2's.
  s.kv_lens.clear();
  s.page_size = 8;
  const auto small = hopper_family().reject_reason({64, 64, 8, 2, 1, 1, 0}, s, limits_for_arch("sm_90a"));
  ASSERT_TRUE(small);
  EXPECT_NE(small->find("page size 8 is below 16 (fa2 takes every page size)"), std::string::npos) << *small;
  s.page_size = 32;
  const auto split = hopper_family().reject_reason({64, 80, 8, 2, 1, 1, 0}, s, limits_for_arch("sm_90a"));
  ASSERT_TRUE(split);
  EXPECT_NE(split->find("block_n 80 is not a whole number of pages of 32 rows"), std::string::npos) << *split;
  s.page_size = 256;  // a tile of 80 or 192 keys would cross a page's end
  for (int n : {80, 192}) {
    const auto crosses = hopper_family().reject_reason({64, n, 8, 2, 1, 1, 0}, s, limits_for_arch("sm_90a"));
    ASSERT_TRUE(crosses) << n;
    EXPECT_NE(crosses->find(fmt::format("block_n {} is not a whole number of pages of 256 rows, nor a whole part", n)),
              std::string::npos)
        << *crosses;
  }
  EXPECT_FALSE(hopper_family().reject_reason({64, 128, 8, 2, 1, 1, 0}, s, limits_for_arch("sm_90a")));
  s.page_size = 32;
  const auto two = hopper_family().reject_reason({128, 64, 12, 2, 3, 1, 0}, s, limits_for_arch("sm_90a"));
  ASSERT_TRUE(two);
  EXPECT_NE(two->find("one computing warpgroup (block_m 64, not 128)"), std::string::npos) << *two;
  EXPECT_FALSE(hopper_family().reject_reason({64, 64, 8, 2, 1, 1, 0}, s, limits_for_arch("sm_90a")));
}

using testing::fake;

TEST(KvCacheParams, APagedCacheGetsPageStridesAndItsTable) {
  problem s = cache_problem();
  s.page_size = 16;
  s.kv_lens = "3/16/17/1000";
  forward_tensors t{fake(0x1000), fake(0x2000), fake(0x3000), const_cast<void*>(fake(0x4000)),
                    static_cast<float*>(const_cast<void*>(fake(0x5000)))};
  EXPECT_NE(invalid_input_message([&] { make_fwd_params(s, t, {}, {}, 0); }).find("needs block_table"),
            std::string::npos);
  t.block_table = static_cast<const int*>(fake(0x6000));
  t.num_pages = 4 * 63;
  EXPECT_NE(invalid_input_message([&] { make_fwd_params(s, t, {}, {}, 0); }).find("cache_seqlens"),
            std::string::npos);
  t.seqlens_k = static_cast<const int*>(fake(0x7000));
  const attn_k::fwd_params p = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(p.kv_batch_stride, 16 * 2 * 128) << "a page's stride";
  EXPECT_EQ(p.kv_head_stride, 128);
  EXPECT_EQ(p.kv_row_stride, 2 * 128);
  EXPECT_EQ(p.page_shift, 4);
  EXPECT_EQ(p.pages_per_seq, 63);
  EXPECT_EQ(p.block_table, t.block_table);
  EXPECT_EQ(p.seqlens_k, t.seqlens_k);
  s.page_size = 0;
  s.kv_lens = "";
  const attn_k::fwd_params dense = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(dense.block_table, nullptr);
  EXPECT_EQ(dense.seqlens_k, nullptr);
}

TEST(KvCacheInputs, ThePageTableIsAPermutationOfEveryPage) {
  problem s = cache_problem(5, 1000);
  s.page_size = 32;
  const auto table = random_page_table(s, 7);
  ASSERT_EQ(table.size(), size_t(5 * 32));
  std::vector<int> sorted = table;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], int(i));
  std::vector<int> identity(table.size());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(table, identity) << "not shuffled";
  EXPECT_NE(random_page_table(s, 8), table) << "the seed decides";
}

// The float64 reference with lengths is the reference of each sequence cut to its length: a
// sequence of length 0 gives zeros and an LSE of -inf; causal is bottom-right per sequence.
TEST(KvCacheReference, EachSequenceSeesItsOwnKeys) {
  for (bool causal : {false, true}) {
    problem s;
    s.batch = 3, s.heads = 2, s.kv_heads = 1, s.q_len = 3, s.kv_len = 9, s.head_dim = 4, s.causal = causal;
    s.kv_lens = "0/2/9";
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    auto random = [&](size_t n) {
      std::vector<float> x(n);
      for (auto& e : x) e = normal(rng);
      return x;
    };
    const auto q = random(3 * 2 * 3 * 4), k = random(3 * 9 * 4), v = random(3 * 9 * 4);
    std::vector<double> lse;
    const auto out = attention_fp64(s, q, k, v, &lse);
    const int64_t lens[] = {0, 2, 9};
    for (int64_t b = 0; b < 3; ++b) {
      problem one = s;
      one.batch = 1, one.kv_len = std::max<int64_t>(lens[b], 1), one.kv_lens = "";
      if (lens[b] == 0) {
        for (int64_t x = 0; x < 2 * 3 * 4; ++x) EXPECT_EQ(out[b * 24 + x], 0.0);
        for (int64_t x = 0; x < 6; ++x) EXPECT_TRUE(std::isinf(lse[b * 6 + x]) && lse[b * 6 + x] < 0);
        continue;
      }
      std::vector<float> qb(q.begin() + b * 24, q.begin() + (b + 1) * 24);
      std::vector<float> kb(k.begin() + b * 36, k.begin() + b * 36 + lens[b] * 4);
      std::vector<float> vb(v.begin() + b * 36, v.begin() + b * 36 + lens[b] * 4);
      std::vector<double> lse_b;
      const auto want = attention_fp64(one, qb, kb, vb, &lse_b);
      for (size_t x = 0; x < want.size(); ++x) EXPECT_DOUBLE_EQ(out[b * 24 + x], want[x]) << b << " " << x;
      for (size_t x = 0; x < lse_b.size(); ++x) {
        if (std::isinf(lse_b[x])) EXPECT_EQ(lse[b * 6 + x], lse_b[x]);
        else EXPECT_DOUBLE_EQ(lse[b * 6 + x], lse_b[x]);
      }
    }
    if (causal) {  // length 2, 3 queries: query 0 sees no key (0 + 2 - 3 < 0)
      EXPECT_TRUE(std::isinf(lse[6]));
      EXPECT_FALSE(std::isinf(lse[7]));
    }
  }
}

}  // namespace
}  // namespace attn
