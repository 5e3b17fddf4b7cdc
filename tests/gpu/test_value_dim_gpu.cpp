// V with its own head dim, dv != d, on the fa2 and hopper families (issue 23, item 2): every
// variant of a small space must pass the reference check on fresh random inputs: DeepSeek's MLA shape (d 192, dv 128),
// dv above and below d, head dims not multiples of 16 or 8 (element loads and stores), causal, GQA,
// cross-attention, bshd, fp16, a window and softcap, and the decode axes (split-KV, whose combine
// runs over dv columns, packed GQA, a paged cache with lengths, the bulk loader).
#include "verify_all.hpp"

namespace attn::testing {
namespace {

struct value_dim_case {
  const char* label;
  problem s;
};
void PrintTo(const value_dim_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }

class value_dim_correctness : public gpu_test, public ::testing::WithParamInterface<value_dim_case> {};

TEST_P(value_dim_correctness, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "dv != d is the fa2 family's (CUDA)";
  const problem& s = GetParam().s;
  const bool decode = s.q_len <= 16;
  const bool bulk = m_gpu.desc.cc_major >= 9 && s.head_dim % 16 == 0 && value_dim(s) % 16 == 0;
  const search_space space =
      decode ? parse_space({"block_m=16,64", "block_n=64", "warps=1,4", "stages=2", "splits=1,3,16", "pack_gqa=0,1",
                            bulk ? "loader=0,1" : "loader=0"},
                           fa2_family().default_space)
             : parse_space({"block_m=64,128", "block_n=32,64", "warps=4,8", "stages=1,2,3"}, fa2_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 6);
}

// The hopper family (sm_90) where it takes the case (d and dv multiples of 16, no KV cache): V's
// and O's tiles, maps and P V over dv; two and three computing warpgroups, tiles of 64, 80 and 128
// keys, the overlap, ping-pong, the persistent grid, two Q tiles (O in its own tile or staged in
// Q's) and the half-width last tile.
TEST_P(value_dim_correctness, every_hopper_variant_passes) {
  const problem& s = GetParam().s;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  expect_every_hopper_variant_passes(s, m_gpu, m_cache);
}

problem with_dv(problem s, int64_t dv) {
  s.head_dim_v = dv;
  return s;
}
problem windowed(problem s, int64_t left, double softcap) {
  s.window_left = left, s.softcap = softcap;
  return s;
}
problem paged(problem s, int64_t page, const char* lens) {
  s.page_size = page, s.kv_lens = lens;
  return s;
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
INSTANTIATE_TEST_SUITE_P(
    value_dims, value_dim_correctness,
    ::testing::Values(
        value_dim_case{"d192_dv128_causal_gqa", with_dv(decode(2, 8, 2, 517, 517, 192, true), 128)},
        value_dim_case{"d64_dv128_cross_bshd", with_dv(decode(1, 4, 4, 200, 333, 64, false, bf, layout::bshd), 128)},
        value_dim_case{"d128_dv64_fp16", with_dv(decode(1, 4, 2, 300, 300, 128, false, fp), 64)},
        value_dim_case{"d72_dv40_causal", with_dv(decode(1, 4, 4, 257, 257, 72, true), 40)},
        value_dim_case{"d59_dv33_cross", with_dv(decode(1, 4, 2, 200, 333, 59, false), 33)},
        value_dim_case{"d192_dv128_window_softcap", windowed(with_dv(decode(1, 4, 4, 400, 400, 192, true), 128), 100, 50)},
        value_dim_case{"d192_dv128_decode", with_dv(decode(2, 16, 2, 1, 1000, 192, false), 128)},
        value_dim_case{"d192_dv128_decode_paged", paged(with_dv(decode(3, 8, 2, 4, 300, 192, true), 128), 16, "5/300/131")},
        value_dim_case{"d64_dv128_decode_paged", paged(with_dv(decode(2, 8, 2, 1, 300, 64, false), 128), 64, "0/300")}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn::testing
