// Head dims that are not multiples of 16 (40, 72, 120, and 33, 59, 111 that are not multiples of
// 8 either: issue 23, item 1): the problem takes them, fa2 pads its MMA loops to 16 (shared memory
// and its register model count the padded width) and loads rows that are not 16-byte aligned by
// element; hopper takes multiples of 8 over tiles padded to 16 (TMA reads zeros past D); the other
// families refuse them naming fa2, the run's header says so, and fa2's split-KV, packed and paged
// variants compile at each (test_compile_variants.cpp compiles the default spaces at 40 and 72,
// hopper's at 40, 72 and 120).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "codegen/compile_pool.hpp"
#include "codegen/kernel_args.hpp"
#include "codegen/family.hpp"
#include "codegen/family_hopper.hpp"
#include "backend/tensor_map.hpp"
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

// Multiples of 8: fa2 and hopper (its tiles padded to 16, read through TMA with zeros past D);
// the others refuse them naming fa2. Not multiples of 8: fa2 only.
TEST(HeadDims, Fa2AndHopperTakeMultiplesOf8OnlyFa2TheRest) {
  for (int64_t d : {40, 72, 120, 248}) {
    const problem s = with_head_dim(d);
    validate(s);
    for (const kernel_family* f : {&fa2_family(), &hopper_family()}) EXPECT_FALSE(problem_refusal(*f, s)) << f->name;
    for (const kernel_family* f : {&wgmma_family(), &mfma_family()}) {
      const auto why = problem_refusal(*f, s);
      ASSERT_TRUE(why) << f->name << " D" << d;
      EXPECT_NE(why->find(fmt::format("needs a head dim that is a multiple of 16 (head dim {}): fa2 takes every head dim",
                                      d)),
                std::string::npos)
          << *why;
    }
  }
  for (int64_t d : {33, 59, 111}) {
    validate(with_head_dim(d));
    testing::expect_only_fa2_takes(with_head_dim(d), fmt::format("(head dim {}): fa2 takes every head dim", d));
    const auto why = problem_refusal(hopper_family(), with_head_dim(d));
    ASSERT_TRUE(why) << d;
    EXPECT_NE(why->find("hopper needs a head dim that is a multiple of 8"), std::string::npos) << *why;
  }
  EXPECT_FALSE(problem_refusal(hopper_family(), with_head_dim(80)));
  // dv too: a multiple of 8 for hopper.
  problem s = with_head_dim(72);
  s.head_dim_v = 40;
  EXPECT_FALSE(problem_refusal(hopper_family(), s));
  s.head_dim_v = 36;
  EXPECT_TRUE(problem_refusal(hopper_family(), s));
}

// hopper reads a head dim of 8s as its tile padded to 16: its shared memory and registers are
// the padded head dim's, its TMA boxes tile the padded width and span the head dim itself (the
// columns past it read as zeros), and its instantiation names the head dim, not the tile.
TEST(HeadDims, HopperPadsItsTilesTo16AndItsMapsSpanTheHeadDim) {
  const resource_limits limits = limits_for_arch("sm_90a");
  struct padded {
    int d, tile, swizzle_bytes;
  };
  for (const auto [d, tile, swizzle_bytes] : {padded{40, 48, 32}, {72, 80, 32}, {56, 64, 128}, {88, 96, 64},
                                              {120, 128, 128}, {248, 256, 128}}) {
    for (const tile_config& c : hopper_family().default_space.enumerate()) {
      EXPECT_EQ(hopper_family().shared_memory_bytes(c, with_head_dim(d)),
                hopper_family().shared_memory_bytes(c, with_head_dim(tile)))
          << d << " " << name(c);
      EXPECT_EQ(!hopper_family().reject_reason(c, with_head_dim(d), limits),
                !hopper_family().reject_reason(c, with_head_dim(tile), limits))
          << d << " " << name(c);
    }
    const tensor_map_args a = tensor_map_for(nullptr, true, d, 1000, 8, 2, d, 1000 * d, 8000 * d, 64);
    EXPECT_EQ(a.dims[0], static_cast<uint64_t>(d));
    EXPECT_EQ(a.swizzle_bytes, swizzle_bytes) << d;  // the padded tile's (kernels/common/swizzle.cuh)
    EXPECT_EQ(a.box[0], static_cast<uint32_t>(swizzle_bytes / 2)) << d;
    EXPECT_FALSE(tensor_map_problem(a)) << *tensor_map_problem(a);
    EXPECT_FALSE(tma_stride_problem(with_head_dim(d))) << d;
    const std::string text = hopper_family().instantiation({128, 128, 12, 2, 7}, with_head_dim(d));
    EXPECT_NE(text.find(fmt::format("hopper_config<true, {}, 128, 128, 12, 2, false, 3, ", d)), std::string::npos)
        << text;
  }
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
  EXPECT_EQ(searched_families(run, 9, 0, with_head_dim(40)), "hopper");
  const std::string header = searched_families(run, 9, 0, with_head_dim(59));
  EXPECT_EQ(header.rfind("fa2 (family hopper needs a head dim that is a multiple of 8 (head dim 59)", 0), 0u) << header;
}

// Rows of 59 elements start 118 bytes apart: the tensors need an element's alignment, not 16
// bytes, and any positive stride of at least D; a multiple of 8 still needs 16 bytes.
TEST(HeadDims, RowsThatAreNotA16ByteMultipleNeedOnlyAnElementsAlignment) {
  problem s = with_head_dim(59);
  auto at = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
  const forward_tensors odd{at(0x1002), at(0x2002), at(0x3006), at(0x400a), reinterpret_cast<float*>(0x5000)};
  const auto p = make_fwd_params(s, odd, {}, {}, 0);
  EXPECT_EQ(p.q_row_stride, 59);
  EXPECT_EQ(p.kv_head_stride, 1000 * 59);
  EXPECT_NO_THROW(make_fwd_params(s, odd, {}, {2 * 1000 * 61, 1000 * 61, 61}, 0));  // rows padded to 61
  const forward_tensors unaligned{at(0x1001), at(0x2002), at(0x3006), at(0x400a), reinterpret_cast<float*>(0x5000)};
  try {
    make_fwd_params(s, unaligned, {}, {}, 0);
    ADD_FAILURE() << "a q at an odd address was accepted";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("is not 2-byte aligned"), std::string::npos) << e.what();
  }
  s.head_dim = 64;
  try {
    make_fwd_params(s, odd, {}, {}, 0);
    ADD_FAILURE() << "D=64 with q at 0x1002 was accepted";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("is not 16-byte aligned"), std::string::npos) << e.what();
  }
}

TEST(HeadDims, Fa2SplitPackedAndPagedVariantsCompile) {
  const temp_dir dir("attn-tune-head-dims");
  const compile_cache cache(dir.path().string());
  for (int64_t d : {40, 72, 120, 33, 59, 111}) {
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
