// Sliding windows and softcap on the fa2 and hopper families (issue 23, items 3 and 4): every
// variant of a small space must pass the reference check on fresh random inputs, for windows of
// each form (both sides, one side, a causal window, a window of one key, one wider than the
// keys), on ragged lengths, cross-attention, GQA, both layouts and fp16; softcap alone (a hard
// cap of 2 and Gemma-2's 50) and with a window; a window with fa2's decode axes (split-KV, packed
// GQA, a paged cache with per-sequence lengths).
#include "codegen/family.hpp"
#include "verify_all.hpp"

namespace attn::testing {
namespace {

struct variant_case {
  const char* label;
  problem s;
  int64_t left, right;
  double softcap;
  const char* kv_lens = "";
  int64_t page_size = 0;
};
problem with_variant(const variant_case& c);
void PrintTo(const variant_case& c, std::ostream* os) { *os << c.label << ": " << describe(with_variant(c)); }

problem with_variant(const variant_case& c) {
  problem s = c.s;
  s.window_left = c.left, s.window_right = c.right, s.softcap = c.softcap;
  s.kv_lens = c.kv_lens, s.page_size = c.page_size;
  canonicalize(s);
  validate(s);
  return s;
}

class window_softcap_correctness : public gpu_test, public ::testing::WithParamInterface<variant_case> {};

// Tiles of 32 to 128 keys, so the window's edges cut tiles in every way, one to three stages.
TEST_P(window_softcap_correctness, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "windows and softcap are the fa2 family's (CUDA)";
  const problem s = with_variant(GetParam());
  const search_space space =
      parse_space({"block_m=64,128", "block_n=32,64,128", "warps=4", "stages=1,2,3"}, fa2_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 4);  // D=256 prunes the large tiles
}

// The hopper family on the same cases (sm_90): two and three computing warpgroups, tiles of 64,
// 80 and 128 keys (the window's edges cut them in every way), the overlap, ping-pong, the
// persistent grid and the half-width last tile (22; it acts on a window's right edge too), and
// softcap's polynomial (67, 71; refused without softcap): softcap 50 takes its degree-3 form on
// every warp of standard-normal scores, softcap 8 the degree-5 form on most warps (3 on some),
// softcap 5 on some tiles and tanh.approx on others, softcap 2 almost never;
// trimmed warpgroups (135, 150), which skip a window's edge tiles their rows do not see, and the
// half-width first tile (261, 279, 391: with the persistent grid, ping-pong and the half-width last
// tile, trimmed), where a warpgroup's rows see only its first tile's second half.
TEST_P(window_softcap_correctness, every_hopper_variant_passes) {
  if (m_gpu.backend != backend::cuda || !runs_on(hopper_family(), m_gpu.desc.cc_major, m_gpu.desc.cc_minor))
    GTEST_SKIP() << "hopper runs on sm_90 (Hopper) only; this is " << m_gpu.desc.arch;
  const problem s = with_variant(GetParam());
  const search_space space = parse_space(
      {"block_m=128,192", "block_n=64,80,128", "warps=12,16", "stages=2", "schedule=3,6,7,22,67,71,135,150,261,279,391"},
      hopper_family().default_space);
  // D=256 with softcap and a window keeps one config of this space (128x64 with the overlap: the
  // register margin prunes the rest; H200, 2026-12-02).
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space, "hopper"), s.head_dim == 256 ? 1 : 4);
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
INSTANTIATE_TEST_SUITE_P(
    window_softcap, window_softcap_correctness,
    ::testing::Values(
        variant_case{"both_sides", decode(2, 4, 4, 300, 300, 64, false), 100, 50, 0},
        variant_case{"causal_window_gqa", decode(2, 8, 2, 517, 517, 128, true), 64, -1, 0},
        variant_case{"left_only_cross", decode(1, 4, 4, 200, 333, 128, false), 77, -1, 0},
        variant_case{"right_only_bshd", decode(2, 4, 2, 259, 259, 64, false, bf, layout::bshd), -1, 31, 0},
        variant_case{"one_key", decode(1, 4, 4, 130, 130, 64, false), 0, 0, 0},
        variant_case{"wider_than_keys_fp16", decode(1, 4, 4, 100, 100, 128, true, fp), 5000, -1, 0},
        variant_case{"more_queries_than_keys", decode(1, 4, 4, 300, 90, 64, false), 20, 20, 0},
        variant_case{"softcap_2", decode(2, 4, 4, 257, 257, 128, false), -1, -1, 2.0},
        variant_case{"softcap_8_gqa", decode(2, 8, 2, 333, 333, 128, false), -1, -1, 8.0},
        variant_case{"softcap_5_causal_d64", decode(1, 4, 4, 400, 400, 64, true), -1, -1, 5.0},
        variant_case{"softcap_50_causal", decode(1, 8, 2, 384, 384, 64, true), -1, -1, 50.0},
        variant_case{"softcap_and_window_d256", decode(1, 4, 4, 300, 300, 256, true), 128, -1, 5.0}),
    [](const auto& info) { return std::string(info.param.label); });

// A window on decode shapes: split-KV shares that start past tile 0, packed GQA, a paged cache and
// per-sequence lengths (the window bottom-right per sequence).
class window_decode_correctness : public gpu_test, public ::testing::WithParamInterface<variant_case> {};

TEST_P(window_decode_correctness, every_split_and_packing_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "windows are the fa2 family's (CUDA)";
  const problem s = with_variant(GetParam());
  const search_space space = parse_space(
      {"block_m=16,64", "block_n=64", "warps=1,4", "stages=2", "splits=1,3,16", "pack_gqa=0,1"},
      fa2_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 12);
}

INSTANTIATE_TEST_SUITE_P(
    window_decode, window_decode_correctness,
    ::testing::Values(variant_case{"q1_window", decode(2, 8, 2, 1, 1000, 128, false), 200, -1, 0},
                      variant_case{"q16_causal_window_softcap", decode(2, 8, 2, 16, 700, 128, true), 100, -1, 30.0},
                      variant_case{"paged_lens_window", decode(3, 8, 2, 4, 300, 128, true), 50, -1, 0, "5/300/131", 16}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn::testing
