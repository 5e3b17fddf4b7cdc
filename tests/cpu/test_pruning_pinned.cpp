// The default spaces and fa2's three pruning rules, pinned directly, and the exact number of
// default-space variants each family keeps (issue 11, item 15: exact counts, not floors).
#include <gtest/gtest.h>

#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"

namespace attn {
namespace {

problem shape_d(int d, bool causal = false) {
  problem s;
  s.batch = 2, s.heads = 4, s.kv_heads = 4, s.q_len = s.kv_len = 1024, s.head_dim = d;
  s.causal = causal;
  return s;
}

int kept(const kernel_family& f, const std::string& arch, int d) {
  int n = 0;
  for (const auto& c : f.default_space.enumerate()) n += !f.reject_reason(c, shape_d(d), limits_for_arch(arch));
  return n;
}

TEST(pruning_pinned, default_spaces) {
  const search_space& w = wgmma_family().default_space;
  EXPECT_EQ(w.block_m, (std::vector<int>{128, 192}));
  EXPECT_EQ(w.block_n, (std::vector<int>{64, 80, 128, 176}));
  EXPECT_EQ(w.warps, (std::vector<int>{8, 12, 16}));
  EXPECT_EQ(w.stages, (std::vector<int>{2, 3, 4}));
  const search_space& f = fa2_family().default_space;
  EXPECT_EQ(f.block_m, (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(f.block_n, (std::vector<int>{32, 64, 128}));
  EXPECT_EQ(f.warps, (std::vector<int>{4, 8}));
  EXPECT_EQ(f.stages, (std::vector<int>{1, 2, 3, 4}));
}

TEST(pruning_pinned, fa2_rule_whole_mma_tiles_per_warp) {
  // 64 rows over 8 warps is 8 rows a warp: not a 16-row mma tile.
  const auto why = fa2_family().reject_reason({64, 64, 8, 2}, shape_d(64), limits_for_arch("sm_90a"));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("block_m 64 over 8 warps"), std::string::npos) << *why;
  EXPECT_FALSE(fa2_family().reject_reason({64, 64, 4, 2}, shape_d(64), limits_for_arch("sm_90a")));
}

TEST(pruning_pinned, fa2_rule_register_budget) {
  // 256 rows over 4 warps = 64 rows a warp: (128 + 128) x 64 / 32 = 512 fp32 registers > 224.
  const auto why = fa2_family().reject_reason({256, 128, 4, 1}, shape_d(128), limits_for_arch("sm_90a"));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("accumulators exceed the register budget: 512 float registers per thread > 224"),
            std::string::npos)
      << *why;
}

TEST(pruning_pinned, fa2_rule_shared_memory) {
  // D=256, 128-key tiles, 4 stages: far over sm_80's opt-in limit.
  resource_limits small = limits_for_arch("sm_80");
  const auto why = fa2_family().reject_reason({64, 128, 4, 4}, shape_d(256), small);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("shared memory"), std::string::npos) << *why;
  EXPECT_NE(why->find(std::to_string(small.shared_memory_per_block / 1024) + " KiB per block"), std::string::npos)
      << *why;
}

TEST(pruning_pinned, exact_counts_of_the_default_spaces) {
  // What the NVRTC compile tests compile: a change to a resource model shows here as a number.
  EXPECT_EQ(kept(fa2_family(), "sm_80", 64), 51);
  EXPECT_EQ(kept(fa2_family(), "sm_80", 128), 31);
  EXPECT_EQ(kept(fa2_family(), "sm_90a", 64), 52);
  EXPECT_EQ(kept(fa2_family(), "sm_90a", 128), 37);
  EXPECT_EQ(kept(wgmma_family(), "sm_90a", 64), 42);
  EXPECT_EQ(kept(wgmma_family(), "sm_90a", 128), 31);
}

}  // namespace
}  // namespace attn
