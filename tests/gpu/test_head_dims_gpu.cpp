// Head dims that are not multiples of 16 on the fa2 family (issue 23, item 1), of 8 (40, 72; and
// on the hopper family) and not (33, 59, 111: rows not 16-byte aligned, loaded and stored by element):
// every variant of a small space must pass the reference check on fresh random inputs, dense and
// causal, GQA, cross-attention, bshd, fp16, with a window, and with the decode axes (split-KV, whose
// combine runs over D columns, packed GQA, a paged cache with lengths).
#include "verify_all.hpp"

namespace attn::testing {
namespace {

struct head_dim_case {
  const char* label;
  problem s;
};
void PrintTo(const head_dim_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }

class head_dim_correctness : public gpu_test, public ::testing::WithParamInterface<head_dim_case> {};

TEST_P(head_dim_correctness, every_variant_passes) {
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "head dims of 8s are the fa2 family's (CUDA)";
  const problem& s = GetParam().s;
  const bool decode = s.q_len <= 16;
  const search_space space =
      decode ? parse_space({"block_m=16,64", "block_n=64", "warps=1,4", "stages=2", "splits=1,3,16", "pack_gqa=0,1"},
                           fa2_family().default_space)
             : parse_space({"block_m=64,128", "block_n=32,64", "warps=4", "stages=1,2,3"}, fa2_family().default_space);
  EXPECT_GE(verify_all(s, m_gpu, m_cache, space), 6);
}

// The hopper family (sm_90) takes the multiples of 8 (tiles padded to 16, TMA's zeros past D and
// its clipped stores): every variant of a small space on each case it takes (it refuses the
// others and the paged cache, naming fa2).
TEST_P(head_dim_correctness, every_hopper_variant_passes) {
  const problem& s = GetParam().s;
  if (auto why = hopper_skip_reason(m_gpu, s)) GTEST_SKIP() << *why;
  expect_every_hopper_variant_passes(s, m_gpu, m_cache);
}

problem windowed(problem s, int64_t left) {
  s.window_left = left;
  return s;
}
problem paged(problem s, int64_t page, const char* lens) {
  s.page_size = page, s.kv_lens = lens;
  return s;
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
INSTANTIATE_TEST_SUITE_P(
    head_dims, head_dim_correctness,
    ::testing::Values(head_dim_case{"d40", decode(2, 4, 4, 300, 300, 40, false)},
                      head_dim_case{"d40_causal_gqa", decode(2, 8, 2, 517, 517, 40, true)},
                      head_dim_case{"d72_cross_bshd", decode(1, 4, 4, 200, 333, 72, false, bf, layout::bshd)},
                      head_dim_case{"d120_causal_fp16", decode(1, 4, 2, 257, 257, 120, true, fp)},
                      head_dim_case{"d88_window", windowed(decode(1, 4, 4, 400, 400, 88, true), 100)},
                      head_dim_case{"d40_decode", decode(2, 8, 2, 1, 1000, 40, false)},
                      head_dim_case{"d56_causal_gqa", decode(2, 8, 2, 517, 517, 56, true)},
                      head_dim_case{"d184_cross", decode(1, 4, 4, 200, 333, 184, false)},
                      head_dim_case{"d72_decode_paged", paged(decode(3, 8, 2, 4, 300, 72, true), 16, "5/300/131")},
                      // Not multiples of 8 (FlashAttention's 59 and 111, and 33): element loads and stores.
                      head_dim_case{"d59", decode(2, 4, 4, 300, 300, 59, false)},
                      head_dim_case{"d33_causal_gqa", decode(2, 8, 2, 517, 517, 33, true)},
                      head_dim_case{"d111_cross_bshd_fp16", decode(1, 4, 2, 200, 333, 111, false, fp, layout::bshd)},
                      head_dim_case{"d59_window", windowed(decode(1, 4, 4, 400, 400, 59, true), 100)},
                      head_dim_case{"d111_decode", decode(2, 8, 2, 1, 1000, 111, false)},
                      head_dim_case{"d33_decode_paged", paged(decode(3, 8, 2, 4, 300, 33, true), 16, "5/300/131")}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace attn::testing
