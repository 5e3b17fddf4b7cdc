// Head dims that are multiples of 8 but not of 16 (40, 72, 120: issue 23, item 1, in part): the
// problem takes them, fa2 pads its MMA loops to 16 (shared memory and its register model count the
// padded width), the other families refuse them naming fa2, the run's header says so, and fa2's
// split-KV, packed and paged variants compile at D=40 and 72 (test_compile_variants.cpp compiles
// the default spaces at 40 and 72).
#include <gtest/gtest.h>

#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "common/resources.cuh"
#include "core/problem.hpp"
#include "family_checks.hpp"
#include "run/orchestrator.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

problem with_head_dim(int64_t d) {
  problem s;
  s.batch = 2, s.heads = 8, s.kv_heads = 2, s.q_len = s.kv_len = 1000, s.head_dim = d;
  return s;
}

TEST(HeadDims, TheMmaWidthIsTheNextMultipleOf16) {
  EXPECT_EQ(attn_k::mma_head_dim(40), 48);
  EXPECT_EQ(attn_k::mma_head_dim(64), 64);
  EXPECT_EQ(attn_k::mma_head_dim(72), 80);
  EXPECT_EQ(attn_k::mma_head_dim(248), 256);
  // fa2's shared memory holds the padded rows: D=40 takes what D=48 takes.
  const tile_config c{64, 64, 4, 2};
  EXPECT_EQ(fa2_family().shared_memory_bytes(c, with_head_dim(40)), fa2_family().shared_memory_bytes(c, with_head_dim(48)));
}

TEST(HeadDims, OnlyFa2TakesThemAndTheOthersSayWhy) {
  const problem s = with_head_dim(72);
  validate(s);
  testing::expect_only_fa2_takes(s, "needs a head dim that is a multiple of 16 (head dim 72): fa2 takes multiples of 8");
  EXPECT_FALSE(problem_refusal(hopper_family(), with_head_dim(80)));
}

TEST(HeadDims, TheBulkLoaderIsRefusedAndTheHeaderNamesTheFamilyThatRuns) {
  resource_limits limits = limits_for_arch("sm_90a");
  const auto why = fa2_family().reject_reason({64, 64, 4, 2, 1}, with_head_dim(40), limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("head dim 40 is not a multiple of 16"), std::string::npos) << *why;
  EXPECT_FALSE(fa2_family().reject_reason({64, 64, 4, 2, 0}, with_head_dim(40), limits));
  family_run run;
  run.families = {"fa2", "wgmma", "hopper"};
  run.spaces = {fa2_family().default_space, wgmma_family().default_space, hopper_family().default_space};
  run.families_defaulted = true;
  EXPECT_EQ(searched_families(run, 9, 0, with_head_dim(128)), "hopper");
  const std::string header = searched_families(run, 9, 0, with_head_dim(40));
  EXPECT_EQ(header.rfind("fa2 (family hopper needs a head dim that is a multiple of 16 (head dim 40)", 0), 0u) << header;
}

TEST(HeadDims, Fa2SplitPackedAndPagedVariantsCompile) {
  const temp_dir dir("attn-tune-head-dims");
  const compile_cache cache(dir.path().string());
  for (int64_t d : {40, 72, 120}) {
    for (const char* arch : {"sm_90a", "sm_80"}) {
      problem s = with_head_dim(d);
      s.q_len = 4, s.kv_len = 3000, s.causal = true, s.page_size = 16, s.kv_lens = "100/3000";
      tune_options t;
      t.family = "fa2";
      t.configs = {{64, 64, 4, 2}, {16, 64, 1, 2, 0, 8, 1}, {64, 32, 4, 3, 0, 3, 0}};
      const tune_result r = compile_only(s, arch, cache, t);
      ASSERT_EQ(r.records.size(), 3u);
      for (const auto& rec : r.records)
        EXPECT_EQ(rec.status, status::compiled) << arch << " D" << d << " " << name(rec.config) << ": " << rec.message;
    }
  }
}

}  // namespace
}  // namespace attn
