// Packed variable-length batches on the fa2 and hopper families (issue 23, item 5): every variant
// of a small space must pass the reference check on fresh random inputs: ragged lengths with
// empty sequences (no queries, or queries and no keys), causal (bottom-right per sequence), GQA,
// cross-attention (kv_seqlens), both layouts, fp16, a window with softcap, dv != d and a head dim
// that is not a multiple of 8 (fa2's), and sequences shorter than a tile, ending inside one and
// filling tiles exactly (hopper's boxes cross sequences: O by row, K/V of the next masked).
#include "codegen/family.hpp"
#include "verify_all.hpp"

namespace attn::testing {
namespace {

struct varlen_case {
  const char* label;
  problem s;
};
void PrintTo(const varlen_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }

class varlen_correctness : public gpu_test, public ::testing::WithParamInterface<varlen_case> {};

TEST_P(varlen_correctness, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "packed batches are the fa2 family's (CUDA)";
  const problem& s = GetParam().s;
  const bool bulk = m_gpu.desc.cc_major >= 9 && s.head_dim % 16 == 0 && value_dim(s) % 16 == 0;
  const search_space space = parse_space({"block_m=64,128", "block_n=32,64", "warps=4,8", "stages=1,2,3",
                                          bulk ? "loader=0,1" : "loader=0"},
                                         fa2_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 6);
}

// The hopper family (sm_90) where it takes the case (d and dv multiples of 16): two and three
// computing warpgroups, tiles of 64, 80 and 128 keys, the overlap, ping-pong, the persistent
// grid, two Q tiles and the half-width last tile.
TEST_P(varlen_correctness, every_hopper_variant_passes) {
  const problem& s = GetParam().s;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  expect_every_hopper_variant_passes(s, m_gpu, m_cache);
}

problem packed(problem s, const char* q, const char* k = "") {
  s.seqlens = q, s.kv_seqlens = k;
  return s;
}
problem variant(problem s, int64_t left, double softcap, int64_t dv = 0) {
  s.window_left = left, s.softcap = softcap, s.head_dim_v = dv;
  return s;
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
INSTANTIATE_TEST_SUITE_P(
    varlen, varlen_correctness,
    ::testing::Values(
        varlen_case{"ragged_causal_gqa", packed(decode(5, 8, 2, 517, 517, 128, true), "517/0/1/130/300")},
        varlen_case{"ragged_bshd", packed(decode(4, 4, 4, 400, 400, 64, false, bf, layout::bshd), "400/17/0/255")},
        varlen_case{"cross_causal_bshd_fp16",
                    packed(decode(3, 4, 1, 300, 700, 64, true, fp, layout::bshd), "300/5/129", "700/0/64")},
        varlen_case{"window_softcap_causal", variant(packed(decode(3, 4, 2, 600, 600, 128, true), "600/200/333"), 100, 50)},
        varlen_case{"window_both_sides", [] {
                      problem s = packed(decode(2, 4, 4, 300, 300, 64, false), "300/77");
                      s.window_left = 40, s.window_right = 20;
                      return s;
                    }()},
        varlen_case{"d192_dv128_causal", variant(packed(decode(3, 4, 2, 300, 300, 192, true), "300/1/150"), -1, 0, 128)},
        varlen_case{"d59_cross", packed(decode(2, 4, 2, 200, 333, 59, false), "200/31", "333/100")},
        // Tiles of 128 and 192 rows, 64 to 128 keys: a sequence of one row, ones ending a row
        // before and after a tile's end, one of exactly two tiles, at D = 256 and 64.
        varlen_case{"tile_edges_d256", packed(decode(6, 4, 4, 385, 385, 256, false), "1/127/129/256/385/191")},
        varlen_case{"tile_edges_causal_gqa_bshd",
                    packed(decode(5, 8, 2, 450, 450, 64, true, bf, layout::bshd), "193/0/450/64/1")},
        varlen_case{"cross_window_fp16",
                    variant(packed(decode(3, 4, 4, 300, 900, 128, true, fp), "300/1/150", "900/200/0"), 128, 0)}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn::testing
