// FlashAttention's forward test grid (tests/flash_attn_grid.hpp), which the GPU suite runs: every
// case is a problem attn-tune accepts, the family it would run takes it (hopper the head dims of
// 8s, fa2 the others), the suite's space as the tuner adapts it (for_problem) keeps a variant on
// sm_90a, and our window sees exactly the pairs FlashAttention's mask does for its arguments.
#include <gtest/gtest.h>

#include "../flash_attn_grid.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "core/config.hpp"

namespace attn {
namespace {

using testing::flash_attn_head_dims;
using testing::flash_attn_window;
using testing::for_each_flash_attn_case;

TEST(FlashAttnGrid, EveryCaseIsAProblemAFamilyTakesWithAVariantLeft) {
  const search_space hopper = testing::flash_attn_suite_space(true), fa2 = testing::flash_attn_suite_space(false);
  const auto limits = limits_for_arch("sm_90a");
  int cases = 0, windows = 0, packed = 0, capped = 0, on_hopper_count = 0;
  for (int64_t d : flash_attn_head_dims) {
    for_each_flash_attn_case(d, [&](const problem& s, const flash_attn_window& w) {
      ++cases, windows += s.window_left >= 0, packed += !s.seqlens.empty(), capped += s.softcap > 0;
      EXPECT_NO_THROW(validate(s)) << describe(s);
      const bool on_hopper = !problem_refusal(hopper_family(), s).has_value();
      on_hopper_count += on_hopper;
      EXPECT_EQ(on_hopper, d % 8 == 0) << describe(s) << ": " << problem_refusal(hopper_family(), s).value_or("");
      if (!on_hopper) EXPECT_FALSE(problem_refusal(fa2_family(), s).has_value()) << describe(s);
      const kernel_family& f = on_hopper ? hopper_family() : fa2_family();
      int kept = 0;
      for (const tile_config& c : for_problem(on_hopper ? hopper : fa2, s, 132).enumerate())
        kept += !f.reject_reason(c, s, limits);
      EXPECT_GE(kept, 1) << describe(s) << " on " << f.name;
      if (s.seqlens.empty())  // one length for the batch: the pairs of FlashAttention's own mask
        EXPECT_EQ(visible_pairs(s, s.q_len, s.kv_len), testing::flash_attn_visible_pairs(s.q_len, s.kv_len, w))
            << describe(s) << " window " << w.left << "," << w.right << (w.causal ? " causal" : "");
    });
  }
  EXPECT_EQ(cases, 12 * 1056);
  EXPECT_EQ(windows, cases / 2);
  EXPECT_EQ(packed, cases / 2);
  EXPECT_EQ(capped, cases / 2);
  EXPECT_EQ(on_hopper_count, 10 * 1056);  // all but 59 and 111
}

}  // namespace
}  // namespace attn
