// Decode on the fa2 family (and on hopper's, its own tests below): split-KV (every split count of a small space, more splits than K/V
// tiles, N_kv not a multiple of a split's share), packed GQA (4:1, 8:1, MQA; 1:1 unpacked) and
// both loaders (cp.async; bulk copies on sm_90), for
// N_q from 1 to 16, causal (bottom-right) and not, D 64 and 128. Every variant must pass the
// reference check on fresh random inputs; the default decode space's variants as well; and a paged
// cache with per-sequence lengths.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "verify_all.hpp"

namespace attn::testing {
namespace {

struct decode_case {
  const char* label;
  problem s;
};
void PrintTo(const decode_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }

class decode_correctness : public gpu_test, public ::testing::WithParamInterface<decode_case> {};

// Split counts 1 to 64 (a 200-key cache has 4 tiles of 64 keys: 7, 16 and 64 splits leave some
// empty, 3 gives a short last share), packed and not, 16 and 64 rows per block.
TEST_P(decode_correctness, every_split_and_packing_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "the decode axes are the fa2 family's (CUDA)";
  const problem& s = GetParam().s;
  const search_space space = parse_space(
      {"block_m=16,64", "block_n=64", "warps=1,4", "stages=2", "loader=0,1", "splits=1,2,3,7,16,64", "pack_gqa=0,1"},
      fa2_family().default_space);
  const int loaders = m_gpu.desc.cc_major >= 9 ? 2 : 1;  // the bulk loader needs sm_90
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), (s.kv_heads < s.heads ? 24 : 12) * loaders);
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
// The decode shapes both families' tests run.
const std::vector<decode_case>& decode_cases() {
  static const std::vector<decode_case> cases{
      {"mha_q1", decode(2, 4, 4, 1, 200, 128, false)},
      {"gqa4_q1", decode(2, 8, 2, 1, 200, 128, false)},
      {"gqa8_q1_causal", decode(1, 16, 2, 1, 333, 64, true, fp)},
      {"mqa_q3_causal", decode(2, 6, 1, 3, 200, 128, true)},
      {"gqa4_q16_causal", decode(2, 8, 2, 16, 517, 128, true, bf, layout::bshd)},
      {"gqa4_q16", decode(1, 8, 2, 16, 200, 64, false, fp)},
      {"gqa8_q7_causal_ragged", decode(3, 8, 1, 7, 129, 128, true)},
      {"mha_q16_causal", decode(1, 4, 4, 16, 64, 128, true)}};
  return cases;
}
INSTANTIATE_TEST_SUITE_P(decode, decode_correctness, ::testing::ValuesIn(decode_cases()),
                         [](const auto& info) { return std::string(info.param.label); });

// The same decode shapes on the hopper family (sm_90 only): split counts 1 to 64 (more splits than
// K/V tiles among them, and a short last share), packed and not (groups that are not powers of two,
// MQA over 6 heads and Qwen2's 7, pack in power-of-two slots), one block per tile and a persistent
// grid, 64 and 128 keys a tile, and two computing warpgroups once.
class hopper_decode_correctness : public gpu_test, public ::testing::WithParamInterface<decode_case> {};
TEST_P(hopper_decode_correctness, every_split_and_packing_passes) {
  const problem& s = GetParam().s;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  const search_space space =
      parse_space({"block_m=64", "block_n=64,128", "warps=8", "stages=2", "schedule=1,5", "splits=1,3,7,64", "pack_gqa=0,1"},
                  hopper_family().default_space);
  const bool packs = s.kv_heads < s.heads;
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), 16 * (packs ? 2 : 1));
  const std::string label = GetParam().label;
  if (label == "gqa4_q16_causal" || label == "gqa7_q16_causal") {  // two computing warpgroups
    const search_space two = parse_space(
        {"block_m=128", "block_n=128", "warps=12", "stages=2", "schedule=1,7", "splits=1,5", "pack_gqa=0,1"},
        hopper_family().default_space);
    EXPECT_GE(verify_all(s, m_gpu, m_cache, two, "hopper"), 8);
  }
}
// fa2's shapes (MQA over 6 heads: 8 slots a row), an MQA group of 64, Qwen2-7B's group of 7 (28
// heads, 4 K/V heads: 8 slots a row; 16 rows of them span two 64-row blocks), MQA over 48 heads
// (64 slots: one query row a 64-row block), and d 192 / dv 128.
std::vector<decode_case> hopper_decode_cases() {
  std::vector<decode_case> cases = decode_cases();
  cases.push_back({"mqa64_q1", decode(2, 64, 1, 1, 1000, 128, false)});
  cases.push_back({"gqa7_q1", decode(3, 28, 4, 1, 333, 128, false)});
  cases.push_back({"mqa48_q2_causal", decode(2, 48, 1, 2, 300, 64, true, fp)});  // 64 slots: a query row a box
  cases.push_back({"gqa7_q16_causal", decode(2, 28, 4, 16, 517, 128, true, bf, layout::bshd)});
  problem mla = decode(2, 8, 2, 16, 300, 192, true);
  mla.head_dim_v = 128;
  cases.push_back({"gqa4_q16_causal_d192_dv128", mla});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(decode, hopper_decode_correctness, ::testing::ValuesIn(hopper_decode_cases()),
                         [](const auto& info) { return std::string(info.param.label); });

// Two blocks an SM (schedule bit 32, NOTES D10: launch bounds of 2, each block's register hand-over
// in half the register file; opt-in): the same shapes, one block per tile and a persistent grid of
// two blocks an SM, split counts 1 to 64, packed and not. Not yet run on a GPU: it runs only with
// ATTN_TUNE_TWO_BLOCKS=1 (bench/device/two_blocks_ab.sh sets it, in a process of its own), so that
// a hang in it cannot stop the rest of `ctest -L gpu` until it has passed once.
class hopper_two_blocks_correctness : public gpu_test, public ::testing::WithParamInterface<decode_case> {};
TEST_P(hopper_two_blocks_correctness, every_split_and_packing_passes) {
  const char* on = std::getenv("ATTN_TUNE_TWO_BLOCKS");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "two blocks an SM (NOTES D10): ATTN_TUNE_TWO_BLOCKS=1";
  const problem& s = GetParam().s;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  const search_space space =
      parse_space({"block_m=64", "block_n=64", "warps=8", "stages=2", "schedule=33,37", "splits=1,7,64", "pack_gqa=0,1"},
                  hopper_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), 6 * (s.kv_heads < s.heads ? 2 : 1));
}
INSTANTIATE_TEST_SUITE_P(decode, hopper_two_blocks_correctness, ::testing::ValuesIn(hopper_decode_cases()),
                         [](const auto& info) { return std::string(info.param.label); });

// A paged cache (page sizes 1 to 256, a random page table; the rows past a sequence's length NaN in
// the pages, so a kernel that reads one fails) and per-sequence lengths (0 and 1 among them; rows
// of a causal sequence shorter than N_q see no key), through every split count, packing and loader.
struct kv_cache_case {
  const char* label;
  problem s;
  int64_t page_size;
  const char* kv_lens;
};
void PrintTo(const kv_cache_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }
class kv_cache_correctness : public gpu_test, public ::testing::WithParamInterface<kv_cache_case> {};

TEST_P(kv_cache_correctness, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "paged caches and kv_lens are the fa2 family's (CUDA)";
  problem s = GetParam().s;
  s.page_size = GetParam().page_size;
  s.kv_lens = GetParam().kv_lens;
  const search_space space = parse_space(
      {"block_m=16,64", "block_n=64", "warps=1,4", "stages=2", "loader=0,1", "splits=1,3,16", "pack_gqa=0,1"},
      fa2_family().default_space);
  const int loaders = m_gpu.desc.cc_major >= 9 ? 2 : 1;
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 6 * (s.kv_heads < s.heads ? 2 : 1) * loaders);
}

INSTANTIATE_TEST_SUITE_P(
    kv_cache, kv_cache_correctness,
    ::testing::Values(kv_cache_case{"page1_lens_0_1", decode(3, 8, 2, 1, 77, 128, false), 1, "0/1/77"},
                      kv_cache_case{"page2_q7_causal", decode(2, 8, 2, 7, 129, 128, true), 2, "uniform:1:129"},
                      kv_cache_case{"page16_q16_causal_short", decode(3, 8, 2, 16, 300, 128, true), 16, "5/300/131"},
                      kv_cache_case{"page64_bshd_causal", decode(2, 4, 4, 4, 333, 128, true, bf, layout::bshd), 64,
                                    "uniform:0:333"},
                      kv_cache_case{"page256_mqa_fp16", decode(2, 8, 1, 1, 1000, 64, false, fp), 256, ""},
                      kv_cache_case{"lens_only_gqa4", decode(4, 8, 2, 1, 500, 128, false), 0, "1/0/499/500"},
                      kv_cache_case{"lens_only_q16_causal", decode(2, 8, 2, 16, 200, 128, true), 0, "16/3"}),
    [](const auto& info) { return std::string(info.param.label); });

// The same KV caches on hopper (sm_90 only; pages of 16 rows or more: smaller pages are fa2's): the
// copy engine reads a page's rows a box at a time, and a sequence's last tile's V rows past its
// length (NaN in the pages) are zeroed before P V.
class hopper_kv_cache_correctness : public gpu_test, public ::testing::WithParamInterface<kv_cache_case> {};
TEST_P(hopper_kv_cache_correctness, every_variant_passes) {
  problem s = GetParam().s;
  s.page_size = GetParam().page_size;
  s.kv_lens = GetParam().kv_lens;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  const search_space space =
      parse_space({"block_m=64", "block_n=64,128", "warps=8", "stages=2", "schedule=1,5", "splits=1,3,16", "pack_gqa=0,1"},
                  hopper_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), 12 * (s.kv_heads < s.heads ? 2 : 1));
}
INSTANTIATE_TEST_SUITE_P(
    kv_cache, hopper_kv_cache_correctness,
    ::testing::Values(kv_cache_case{"page16_q16_causal_short", decode(3, 8, 2, 16, 300, 128, true), 16, "5/300/131"},
                      kv_cache_case{"page16_lens_0_1", decode(3, 8, 2, 1, 77, 128, false), 16, "0/1/77"},
                      kv_cache_case{"page64_bshd_causal", decode(2, 4, 4, 4, 333, 128, true, bf, layout::bshd), 64,
                                    "uniform:0:333"},
                      kv_cache_case{"page256_mqa_fp16", decode(2, 8, 1, 1, 1000, 64, false, fp), 256, ""},
                      kv_cache_case{"page16_gqa7_lens", decode(3, 28, 4, 1, 300, 128, false), 16, "0/1/300"},
                      kv_cache_case{"page32_d192_dv128", [] {
                                      problem s = decode(2, 8, 2, 7, 200, 192, true);
                                      s.head_dim_v = 128;
                                      return s;
                                    }(), 32, "3/200"},
                      kv_cache_case{"lens_only_gqa4", decode(4, 8, 2, 1, 500, 128, false), 0, "1/0/499/500"},
                      kv_cache_case{"lens_only_q16_causal", decode(2, 8, 2, 16, 200, 128, true), 0, "16/3"}),
    [](const auto& info) { return std::string(info.param.label); });

// The family's default space, as for_problem adapts it, on decode shapes like the (a long
// cache, GQA 4:1, N_q 1 and 16 causal): every variant the tuner would run passes, and the best is
// a split or packed one.
class decode_default_space : public gpu_test {};
TEST_F(decode_default_space, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "the decode axes are the fa2 family's (CUDA)";
  for (const problem& s : {decode(2, 32, 8, 1, 8192, 128, false), decode(4, 32, 8, 16, 4096, 128, true)}) {
    const search_space space = for_problem(fa2_family().default_space, s, m_gpu.desc.sm_count);
    EXPECT_GT(space.splits.size(), 1u) << describe(s);
    EXPECT_EQ(space.pack_gqa, (std::vector<int>{0, 1})) << describe(s);
    EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 24) << describe(s);
  }
}

// hopper's default decode space (for_problem) on the shapes: every variant passes.
TEST_F(decode_default_space, hopper_every_variant_passes) {
  for (const problem& s : {decode(2, 32, 8, 1, 8192, 128, false), decode(4, 32, 8, 16, 4096, 128, true)}) {
    if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
    const search_space space = for_problem(hopper_family().default_space, s, m_gpu.desc.sm_count);
    EXPECT_GT(space.splits.size(), 1u) << describe(s);
    EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), 48) << describe(s);
  }
}

// Speculative decode over a group of 8 (128 packed rows: packing_pays, not decode_sized) keeps
// hopper's prefill tiles and schedules, and at small batches searches split-KV with them
// (short_grid_splits): every schedule on two computing warpgroups (block_m 192 is pruned at D 128
// by its registers), packed and not, splits 3 and 8 over 6 and 4 K/V tiles (8 leaves splits
// empty), causal, a cache of 700 keys: about 60 variants.
TEST_F(decode_default_space, hopper_prefill_tiles_with_splits_and_packing_pass) {
  const problem s = decode(1, 16, 2, 16, 700, 128, true);
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  ASSERT_TRUE(packing_pays(s) && !decode_sized(s));
  const search_space space =
      parse_space({"block_n=128,176", "stages=2", "splits=1,3,8", "pack_gqa=0,1"}, hopper_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), 48);
}

}  // namespace
}  // namespace attn::testing
