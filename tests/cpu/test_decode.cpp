// Decode without a GPU: the decode axes (splits, pack_gqa) in config names and --space, the
// heuristic's space per problem, split-KV's merge against float64, and every default-space decode
// variant compiling for sm_90a and sm_80 without spills (also with a paged cache and per-sequence
// lengths).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/runtime.hpp"
#include "backend/tensor_map.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "codegen/family_hopper.hpp"
#include "codegen/family_parts.hpp"
#include "codegen/nvrtc.hpp"
#include "codegen/launch_plan.hpp"
#include "codegen/kernel_args.hpp"
#include "common/resources.cuh"
#include "common/split_merge.cuh"  // kernels/common: the split-KV merge's own code
#include "core/config.hpp"
#include "core/problem.hpp"
#include "invalid_input_message.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

using attn::testing::invalid_input_message;

void f_plan(launch_plan& plan, const tile_config& c, const problem& s, const attn_k::fwd_params& p) {
  fa2_family().plan_launch(plan, c, s, p, gpu_info{});
}

problem decode(int64_t b, int64_t h, int64_t hk, int64_t nq, int64_t nk, int64_t d = 128, bool causal = false) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = nq, s.kv_len = nk, s.head_dim = d, s.causal = causal;
  return s;
}

TEST(DecodeConfig, NamesCarryTheDecodeAxesOnlyWhenSet) {
  EXPECT_EQ(name(tile_config{64, 64, 4, 2}), "m64_n64_w4_s2");
  EXPECT_EQ(name(tile_config{16, 128, 1, 3, 0, 16, 1}), "m16_n128_w1_s3_p16_g1");
  EXPECT_EQ(name(tile_config{16, 128, 1, 3, 0, 1, 1}), "m16_n128_w1_s3_g1");
  EXPECT_EQ(name(tile_config{128, 128, 12, 2, 13, 4, 0}), "m128_n128_w12_s2_k13_p4");
  for (const char* text : {"m16_n128_w1_s3_p16_g1", "m16_n64_w1_s2_p2", "m64_n64_w4_s2_g1", "m128_n64_w12_s2_k3_p8"})
    EXPECT_EQ(name(parse_config_name(text)), text);
  for (const char* bad : {"m16_n64_w1_s2_g1_p2", "m16_n64_w1_s2_p1", "m16_n64_w1_s2_g0", "m16_n64_w1_s2_g2",
                          "m16_n64_w1_s2_p129", "m16_n64_w1_s2_p2_p2", "m16_n64_w1_s2_p"}) {
    const std::string message = invalid_input_message([&] { parse_config_name(bad); });
    EXPECT_NE(message.find(bad), std::string::npos) << bad << ": " << message;
  }
}

TEST(DecodeSpace, Fa2AndHopperTakeTheDecodeAxes) {
  const search_space fa2 = fa2_family().default_space;
  const search_space s = parse_space({"splits=1,4,16", "pack_gqa=1"}, fa2);
  EXPECT_EQ(s.splits, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(s.pack_gqa, (std::vector<int>{1}));
  EXPECT_EQ(s.enumerate().size(), fa2.enumerate().size() * 3);
  EXPECT_NE(space_text(s).find("splits=1,4,16 pack_gqa=1"), std::string::npos) << space_text(s);
  EXPECT_NE(space_text(fa2).find("splits=auto pack_gqa=auto"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { parse_space({"splits=2"}, wgmma_family().default_space); })
                .find("the family has no splits axis"),
            std::string::npos);
  EXPECT_EQ(parse_space({"splits=1,8", "pack_gqa=0,1"}, hopper_family().default_space).enumerate().size(),
            hopper_family().default_space.enumerate().size() * 4);
  EXPECT_NE(invalid_input_message([&] { parse_space({"pack_gqa=2"}, fa2); }).find("pack_gqa 2 is over"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([&] { parse_space({"splits=0"}, fa2); }).find("'0' is not a positive"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([&] { parse_space({"splits=256"}, fa2); }).find("largest supported, 128"),
            std::string::npos);
}

TEST(DecodeSpace, PrefillKeepsItsSpace) {
  const search_space fa2 = fa2_family().default_space;
  problem prefill = decode(4, 32, 32, 4096, 4096);
  const search_space s = for_problem(fa2, prefill, 132);
  EXPECT_EQ(s.enumerate(), default_space().enumerate());
  prefill.kv_heads = 8;  // GQA prefill: one head's rows fill the tiles; no packing, no splits
  EXPECT_EQ(for_problem(fa2, prefill, 132).enumerate(), default_space().enumerate());
  // hopper's prefill space is its own, without splits even where the grid is short of the SMs
  // (not measured yet); other families' spaces are never changed.
  const search_space hopper = hopper_family().default_space;
  for (const problem& p : {decode(4, 32, 32, 4096, 4096), decode(1, 8, 8, 1024, 1024)})
    EXPECT_EQ(for_problem(hopper, p, 132).enumerate(), hopper.enumerate()) << describe(p);
  const problem d = decode(8, 32, 8, 1, 8192);
  EXPECT_EQ(for_problem(wgmma_family().default_space, d, 132).enumerate(), wgmma_family().default_space.enumerate());
}

// hopper's schedule bits that won on softcap (64) and window (128) problems are searched there
// only, beside schedules 3 and 5, unless --space names the schedule; decode keeps its own.
TEST(DecodeSpace, HopperAddsTheSchedulesThatActOnSoftcapAndWindows) {
  const search_space hopper = hopper_family().default_space;
  const std::vector<int> base = hopper.knob;
  auto with = [&](std::vector<int> extra) {
    std::vector<int> out = base;
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  };
  problem p = decode(4, 32, 32, 4096, 4096, 128, true);
  EXPECT_EQ(for_problem(hopper, p, 132).knob, base);
  p.softcap = 50;
  EXPECT_EQ(for_problem(hopper, p, 132).knob, with({67, 69}));
  EXPECT_EQ(knob_extras_for(hopper, p), (std::vector<int>{67, 69}));
  p.dtype = dtype::fp16;  // the polynomial is refused with fp16 (NOTES V13)
  EXPECT_EQ(for_problem(hopper, p, 132).knob, base);
  p.dtype = dtype::bf16;
  p.window_left = 1024;
  EXPECT_EQ(for_problem(hopper, p, 132).knob, with({67, 69, 131, 133}));
  p.softcap = 0;
  EXPECT_EQ(for_problem(hopper, p, 132).knob, with({131, 133}));
  EXPECT_EQ(for_problem(hopper, p, 132).enumerate().size(), hopper.enumerate().size() / base.size() * (base.size() + 2));
  // --space's schedule is searched as named.
  EXPECT_EQ(for_problem(parse_space({"schedule=5"}, hopper), p, 132).knob, (std::vector<int>{5}));
  EXPECT_TRUE(knob_extras_for(parse_space({"schedule=5"}, hopper), p).empty());
  // Other axes named: the extras stay.
  EXPECT_EQ(for_problem(parse_space({"stages=2"}, hopper), p, 132).knob, with({131, 133}));
  // Decode with a window and softcap: decode's schedules only.
  problem d = decode(8, 32, 8, 1, 8192);
  d.window_left = 1024, d.softcap = 50;
  EXPECT_EQ(for_problem(hopper, d, 132).knob, (std::vector<int>{1, 5}));
  // Families without extras, and --help names them.
  EXPECT_EQ(for_problem(fa2_family().default_space, p, 132).knob, fa2_family().default_space.knob);
  EXPECT_EQ(knob_extras_text(hopper), "; schedule +67,69 with softcap in bf16, +131,133 with a window");
  EXPECT_EQ(knob_extras_text(fa2_family().default_space), "");
}

TEST(DecodeSpace, HopperDecodeIsOneWarpgroupWithSplitsAndPacking) {
  const problem d = decode(8, 32, 8, 1, 8192);
  const search_space s = for_problem(hopper_family().default_space, d, 132);
  EXPECT_EQ(s.splits, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(s.pack_gqa, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.block_m, (std::vector<int>{64}));
  EXPECT_EQ(s.warps, (std::vector<int>{8}));
  EXPECT_EQ(s.knob, (std::vector<int>{1, 5}));
  EXPECT_EQ(s.enumerate().size(), 2u * 3 * 2 * 5 * 2);  // block_n, stages, schedules, splits, packing
  // --space's own axes stay.
  const search_space named =
      for_problem(parse_space({"schedule=4", "stages=2"}, hopper_family().default_space), d, 132);
  EXPECT_EQ(named.knob, (std::vector<int>{4}));
  EXPECT_EQ(named.stages, (std::vector<int>{2}));
  EXPECT_EQ(named.block_m, (std::vector<int>{64}));
}

TEST(DecodeSpace, DecodeGetsSplitsPackingAndSmallBlocks) {
  const problem d = decode(8, 32, 8, 1, 8192);  // 64 packed blocks, 256 unpacked: far from 4 waves
  ASSERT_TRUE(decode_sized(d));
  EXPECT_EQ(default_splits(d, true, 132), (std::vector<int>{1, 4, 8, 16}));
  EXPECT_EQ(default_splits(d, false, 132), (std::vector<int>{1, 2, 4}));
  const search_space s = for_problem(fa2_family().default_space, d, 132);
  EXPECT_EQ(s.splits, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(s.pack_gqa, (std::vector<int>{0, 1}));
  for (const tile_config& c : s.enumerate()) EXPECT_EQ(c.block_m, 16 * c.warps) << name(c);
  EXPECT_EQ(s.enumerate().size(), 3u * 2 * 3 * 5 * 2);  // tiles, stages, splits, packing
  // --space's own axes stay.
  const search_space named = for_problem(parse_space({"block_m=64", "splits=4"}, fa2_family().default_space), d, 132);
  EXPECT_EQ(named.block_m, (std::vector<int>{64}));
  EXPECT_EQ(named.splits, (std::vector<int>{4}));
  // A grid that fills the GPU, or too few keys, does not split; MHA does not pack.
  EXPECT_EQ(default_splits(decode(256, 32, 8, 1, 8192), true, 132), (std::vector<int>{1}));
  EXPECT_EQ(default_splits(decode(1, 32, 8, 1, 100), true, 132), (std::vector<int>{1}));
  EXPECT_EQ(for_problem(fa2_family().default_space, decode(1, 32, 32, 1, 8192), 132).pack_gqa, (std::vector<int>{0}));
  // At most 128 splits and one per 64 keys.
  for (int v : default_splits(decode(1, 8, 1, 1, 1 << 20), true, 132)) EXPECT_LE(v, 128);
  for (int v : default_splits(decode(1, 8, 1, 1, 512), true, 132)) EXPECT_LE(v, 8);
  EXPECT_FALSE(decode_sized(decode(1, 32, 4, 16, 4096)));  // 128 packed rows: prefill-like tiles
  // Speculative decode over groups of 8 (Llama-3-70B, 128 packed rows) keeps the prefill tiles
  // and searches packing; 512 packed rows, MHA, or a cache under 4x the rows do not pack.
  const problem spec70b = decode(16, 64, 8, 16, 8192, 128, true);
  EXPECT_FALSE(decode_sized(spec70b));
  EXPECT_TRUE(packing_pays(spec70b));
  for (const search_space& f : {fa2_family().default_space, hopper_family().default_space}) {
    const search_space sp = for_problem(f, spec70b, 132);
    EXPECT_EQ(sp.pack_gqa, (std::vector<int>{0, 1}));
    EXPECT_EQ(sp.block_m, f.block_m);
  }
  // hopper (no prefill splits): at batch 16 both grids fill half the SMs or more, so no splits; at
  // batch 1 the packed grid is 8 tiles (16 and 32 splits fill 132 SMs) and the unpacked one 64 (2, 4).
  EXPECT_EQ(for_problem(hopper_family().default_space, spec70b, 132).splits, (std::vector<int>{1}));
  const problem spec70b_b1 = decode(1, 64, 8, 16, 32768, 128, true);
  const search_space b1 = for_problem(hopper_family().default_space, spec70b_b1, 132);
  EXPECT_EQ(b1.splits, (std::vector<int>{1, 2, 4, 16, 32}));
  EXPECT_EQ(b1.block_m, hopper_family().default_space.block_m);
  EXPECT_EQ(short_grid_splits(spec70b_b1, {0, 1}, 132), b1.splits);
  // Only the packings searched: --space pack_gqa=0 keeps the unpacked grid's counts.
  EXPECT_EQ(for_problem(parse_space({"pack_gqa=0"}, hopper_family().default_space), spec70b_b1, 132).splits,
            (std::vector<int>{1, 2, 4}));
  // At most one split per 128 keys; a cache too short for two keeps {1}.
  EXPECT_EQ(short_grid_splits(decode(1, 64, 8, 16, 2048, 128, true), {0, 1}, 132), (std::vector<int>{1, 2, 4, 16}));
  EXPECT_EQ(short_grid_splits(decode(1, 64, 8, 16, 200, 128, true), {0, 1}, 132), (std::vector<int>{1}));
  // Qwen2's group of 7 (112 packed rows, one tile), 4 K/V heads; at batch 64 no splits.
  EXPECT_EQ(for_problem(hopper_family().default_space, decode(64, 28, 4, 16, 4096, 128, true), 132).splits,
            (std::vector<int>{1}));
  EXPECT_EQ(short_grid_splits(decode(2, 28, 4, 16, 8192, 128, true), {0, 1}, 132), (std::vector<int>{1, 2, 4, 16, 32}));
  EXPECT_FALSE(packing_pays(decode(16, 64, 8, 64, 8192)));
  EXPECT_FALSE(packing_pays(decode(16, 64, 64, 16, 8192)));
  EXPECT_FALSE(packing_pays(decode(16, 64, 8, 16, 63)));
}

TEST(DecodeWorkspace, SizeIsTheCountersThenAPartialOAndLsePerSplitAndRow) {
  const problem d = decode(2, 8, 2, 3, 100, 64);
  EXPECT_EQ(split_workspace_floats(d, 1), 0);
  EXPECT_EQ(split_workspace_floats(d, 4), attn_k::SPLIT_COUNTERS + 4 * 2 * 8 * 3 * (64 + 1));
  EXPECT_EQ(split_counter_bytes(), attn_k::SPLIT_COUNTERS * 4);
}

// A row block's splits count themselves on its counter (up to FUSED_MERGE_SPLITS splits): such a
// launch has at most SPLIT_COUNTERS row blocks, and more is refused before compiling (the pruner)
// and when planned.
TEST(DecodeWorkspace, MoreRowBlocksThanCountersAreRefused) {
  const kernel_family& f = fa2_family();
  const problem wide = decode(2048, 16, 16, 1, 4096);  // 2048 x 16 heads = 32768 row blocks
  const tile_config c{16, 64, 1, 2, 0, 4, 0};
  const auto why = f.reject_reason(c, wide, limits_for_arch("sm_90a"));
  // Above FUSED_MERGE_SPLITS the combine kernel merges: no counters, no limit.
  EXPECT_FALSE(f.reject_reason({16, 64, 1, 2, 0, 8, 0}, wide, limits_for_arch("sm_90a")).has_value());
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("split-KV over 32768 row blocks: at most 16384"), std::string::npos) << *why;
  EXPECT_FALSE(f.reject_reason({16, 64, 1, 2, 0, 1, 0}, wide, limits_for_arch("sm_90a")).has_value());  // no split
  attn_k::fwd_params p{};
  p.o_partial = reinterpret_cast<float*>(256);
  p.workspace_floats = split_workspace_floats(wide, 4);
  launch_plan plan;
  const std::string message = invalid_input_message([&] { f_plan(plan, c, wide, p); });
  EXPECT_NE(message.find("at most 16384"), std::string::npos) << message;
}

// The decode configs fa2 cannot run say why: packing without GQA, the bulk loader before sm_90 or
// on a single stage, a loader it does not have; another family refuses the decode axes.
TEST(DecodeReject, SaysWhy) {
  const kernel_family& f = fa2_family();
  auto why = [&](const tile_config& c, const problem& s, const char* arch) {
    const auto r = f.reject_reason(c, s, limits_for_arch(arch));
    return r ? *r : std::string();
  };
  const problem mha = decode(2, 8, 8, 1, 4096), gqa = decode(2, 8, 2, 1, 4096);
  EXPECT_NE(why({16, 64, 1, 2, 0, 1, 1}, mha, "sm_90a").find("pack_gqa 1 needs fewer K/V heads"), std::string::npos);
  EXPECT_EQ(why({16, 64, 1, 2, 0, 4, 1}, gqa, "sm_90a"), "");
  EXPECT_NE(why({16, 64, 1, 2, 1, 1, 0}, gqa, "sm_80").find("loader 1 (cp.async.bulk) needs sm_90"), std::string::npos);
  EXPECT_NE(why({16, 64, 1, 1, 1, 1, 0}, gqa, "sm_90a").find("loader 1 needs a ring of 2 stages"), std::string::npos);
  EXPECT_NE(why({16, 64, 1, 2, 2, 1, 0}, gqa, "sm_90a").find("loader 2 is not 0"), std::string::npos);
  const auto other = missing_axis(wgmma_family(), {128, 64, 8, 2, 0, 4, 1});
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->find("the family has no decode axes (config splits 4, pack_gqa 1)"), std::string::npos);
  EXPECT_FALSE(missing_axis(f, {16, 64, 1, 2, 1, 4, 1}).has_value());
}

// hopper's decode configs: packing needs GQA and a group of at most a warpgroup's 64 rows (its
// boxes hold whole groups, padded to a power of two); a packed batch takes neither axis; the plan
// counts packed rows (in power-of-two slots) and K/V heads times the splits, and points the
// combine kernel at the partials after the counters.
TEST(DecodeHopper, RefusalsAndPlan) {
  const kernel_family& f = hopper_family();
  auto why = [&](const tile_config& c, const problem& s) {
    const auto r = f.reject_reason(c, s, limits_for_arch("sm_90a"));
    return r ? *r : std::string();
  };
  const tile_config packed{64, 128, 8, 2, 5, 4, 1};
  EXPECT_EQ(why(packed, decode(8, 32, 8, 1, 8192)), "");
  EXPECT_EQ(why(packed, decode(8, 64, 1, 1, 8192)), "");  // MQA: a group of 64
  EXPECT_NE(why(packed, decode(2, 8, 8, 1, 4096)).find("pack_gqa 1 needs fewer K/V heads"), std::string::npos);
  EXPECT_EQ(why(packed, decode(2, 28, 4, 1, 4096)), "");  // Qwen2-7B: a group of 7 in 8 slots
  EXPECT_EQ(why(packed, decode(2, 48, 1, 1, 4096)), "");  // MQA over 48 heads in 64 slots
  EXPECT_NE(why(packed, decode(2, 96, 1, 1, 4096)).find("needs a group (heads / kv_heads = 96) of at most 64"),
            std::string::npos);
  // A group of 7 in 8 slots: N_q 16 is 128 packed rows, two 64-row blocks (112 rows would also be two).
  EXPECT_EQ(hopper_rows(decode(2, 28, 4, 16, 4096), 1), 128);
  EXPECT_EQ(hopper_rows(decode(2, 28, 4, 16, 4096), 0), 16);
  EXPECT_EQ(schedule_for(decode(2, 28, 4, 9, 4096), 64, 50LL << 20, 132, false, 1, 1).m_blocks, 2);  // 72 rows
  EXPECT_NE(why({64, 128, 8, 2, 5, 129, 0}, decode(2, 8, 2, 1, 4096)).find("splits 129 not in [1, 128]"),
            std::string::npos);
  problem varlen = decode(2, 8, 2, 64, 4096);
  varlen.seqlens = "10,64";
  EXPECT_NE(why({64, 128, 8, 2, 5, 4, 0}, varlen).find("no split-KV"), std::string::npos);
  // The schedule: packed rows (1 x 4) in one 64-row block per (batch, K/V head), times 4 splits.
  const problem d = decode(8, 32, 8, 1, 8192);
  const hopper_schedule h = schedule_for(d, 64, 50LL << 20, 132, true, 1, 4);
  EXPECT_EQ(h.m_blocks, 1);
  EXPECT_EQ(h.batch_heads, 64);
  EXPECT_EQ(h.tiles, 256);
  EXPECT_EQ(h.grid, 132);
  const hopper_schedule unpacked = schedule_for(decode(64, 32, 8, 16, 4096), 64, 50LL << 20, 132, false, 0, 2);
  EXPECT_EQ(unpacked.tiles, 64 * 32 * 2);
  EXPECT_EQ(unpacked.grid, 64 * 32 * 2);
  EXPECT_NE(tile_count_problem(decode(65536, 256, 256, 64, 4096), 64, 0, 128).value_or("").find("x 128 splits"),
            std::string::npos);
  // The instantiation names PACK and SPLIT (after DV, 0 for d) and defines the combine kernel.
  const std::string text = f.instantiation(packed, d);
  EXPECT_NE(text.find(", false, false, false, 0, true, true>>(hp)"), std::string::npos) << text;
  EXPECT_NE(text.find("attn_hopper_combine"), std::string::npos);
  EXPECT_EQ(f.instantiation({64, 128, 8, 2, 5, 1, 1}, d).find("attn_hopper_combine"), std::string::npos);
}

// Packed GQA's Q and O maps: 5-d {D, head in the group, row, K/V head, batch}, boxes of whole groups.
TEST(DecodeHopper, PackedTensorMapArgs) {
  // bhsd [2, 32, 16, 128]: head stride 16 x 128, 8 K/V heads of 4.
  const tensor_map_args a = packed_tensor_map_for(reinterpret_cast<void*>(256), true, 128, 16, 32, 4, 2, 128,
                                                  16 * 128, 32 * 16 * 128, 64);
  EXPECT_EQ(a.group, 4u);
  EXPECT_EQ(a.group_stride, 16u * 128 * 2);
  EXPECT_EQ(a.dims, (std::array<uint64_t, 4>{128, 16, 8, 2}));
  EXPECT_EQ(a.strides, (std::array<uint64_t, 3>{256, 4 * 16 * 128 * 2, 32 * 16 * 128 * 2}));
  EXPECT_EQ(a.box, (std::array<uint32_t, 4>{64, 64, 1, 1}));
  EXPECT_FALSE(tensor_map_problem(a).has_value());
  EXPECT_EQ(a.slots, 4u);
  tensor_map_args odd = a;
  odd.slots = 8;  // slots must be the group's power of two
  EXPECT_NE(tensor_map_problem(odd).value_or("").find("groups of 4 heads in 8 slots"), std::string::npos);
  odd.group = odd.slots = 3;
  EXPECT_NE(tensor_map_problem(odd).value_or("").find("64 rows is not a whole number of groups of 3 heads in 3 slots"),
            std::string::npos);
  odd.group = 5;
  odd.slots = 4;
  EXPECT_NE(tensor_map_problem(odd).value_or("").find("groups of 5 heads in 4 slots"), std::string::npos);
  // Qwen2-7B's group of 7 (28 heads, 4 K/V heads) in 8 slots: the map's group dimension is 7, its
  // boxes 8 slots by 8 rows (the eighth slot past the tensor: zeros read, nothing written).
  const tensor_map_args q7 = packed_tensor_map_for(reinterpret_cast<void*>(256), true, 128, 16, 28, 7, 2, 128,
                                                   16 * 128, 28 * 16 * 128, 64);
  EXPECT_EQ(q7.group, 7u);
  EXPECT_EQ(q7.slots, 8u);
  EXPECT_EQ(q7.dims, (std::array<uint64_t, 4>{128, 16, 4, 2}));
  EXPECT_FALSE(tensor_map_problem(q7).has_value());
  EXPECT_EQ(pack_slots(1), 1);
  EXPECT_EQ(pack_slots(8), 8);
  EXPECT_EQ(pack_slots(9), 16);
}

// A split config is not planned without a workspace big enough for its partial outputs.
TEST(DecodeWorkspace, APlanWithoutItIsRefusedNamingTheSize) {
  const problem s = decode(2, 8, 2, 1, 4096);
  const tile_config c{16, 64, 1, 2, 0, 4, 1};
  attn_k::fwd_params p{};
  launch_plan plan;
  const std::string need = std::to_string(split_workspace_floats(s, 4) * 4);
  std::string message = invalid_input_message([&] { f_plan(plan, c, s, p); });
  EXPECT_NE(message.find("needs a workspace of " + need + " bytes; 0 were given"), std::string::npos) << message;
  p.o_partial = reinterpret_cast<float*>(256);  // too small by one float
  p.workspace_floats = split_workspace_floats(s, 4) - 1;
  message = invalid_input_message([&] { f_plan(plan, c, s, p); });
  EXPECT_NE(message.find("needs a workspace of " + need), std::string::npos) << message;
  p.workspace_floats += 1;
  f_plan(plan, c, s, p);
  EXPECT_EQ(plan.grid.x, 4u);  // one 16-row block of 4 packed rows, times 4 splits
  EXPECT_EQ(plan.grid.y, 2u);  // the K/V heads
  // The kernel's argument: the partial O after the counters, the LSEs after the partial O.
  const auto* arg = static_cast<const attn_k::fwd_params*>(plan.argument.get());
  EXPECT_EQ(arg->o_partial, p.o_partial + attn_k::SPLIT_COUNTERS);
  EXPECT_EQ(arg->lse_partial, arg->o_partial + 4 * 2 * 8 * 1 * 128);
  EXPECT_EQ(plan.combine, nullptr);  // up to FUSED_MERGE_SPLITS splits the kernel merges them
  // Above it the combine kernel runs after, a block per output row.
  const tile_config eight{16, 64, 1, 2, 0, 8, 1};
  p.workspace_floats = split_workspace_floats(s, 8);
  launch_plan combined;
  EXPECT_NE(invalid_input_message([&] { f_plan(combined, eight, s, p); }).find("without its combine kernel"),
            std::string::npos);
  combined.combine = reinterpret_cast<kernel_t>(1);  // stands for a loaded combine kernel; never launched
  f_plan(combined, eight, s, p);
  EXPECT_EQ(combined.combine_grid.x, static_cast<unsigned>(2 * 8 * 1));
  EXPECT_EQ(combined.grid.x, 8u);
}

// The split-KV merge (kernels/common/split_merge.cuh, run here with one lane) against
// float64 on random partials: a row's splits see disjoint shares of its keys, some none at all
// (LSE -inf, O 0), and some rows no key in any split.
TEST(DecodeMerge, MatchesFloat64OnRandomPartials) {
  std::mt19937 rng(1234);
  std::normal_distribution<double> normal(0.0, 1.0);
  const float ninf = -std::numeric_limits<float>::infinity();
  const int d = 16;
  auto identity = [](float x) { return x; };
  for (int trial = 0; trial < 400; ++trial) {
    const int splits = 1 + trial % 37;
    const int keys = trial % 5 == 0 ? 0 : 1 + static_cast<int>(rng() % 300);
    // The row's scores and values, split into splits contiguous shares.
    std::vector<double> score(keys), value(size_t(keys) * d);
    for (auto& x : score) x = 3.0 * normal(rng) + (trial % 7 == 0 ? 40.0 : 0.0);
    for (auto& x : value) x = normal(rng);
    std::vector<float> lse(splits, ninf), o(size_t(splits) * d, 0.f);
    const int per = (keys + splits - 1) / std::max(1, splits);
    double top = -INFINITY;
    for (double x : score) top = std::max(top, x);
    for (int s = 0; s < splits; ++s) {
      const int first = std::min(keys, s * per), end = std::min(keys, first + per);
      if (first == end) continue;
      double m = -INFINITY, sum = 0;
      for (int j = first; j < end; ++j) m = std::max(m, score[j]);
      for (int j = first; j < end; ++j) sum += std::exp(score[j] - m);
      lse[s] = static_cast<float>(m + std::log(sum));
      for (int c = 0; c < d; ++c) {
        double x = 0;
        for (int j = first; j < end; ++j) x += std::exp(score[j] - m) * value[size_t(j) * d + c];
        o[size_t(s) * d + c] = static_cast<float>(x / sum);
      }
    }
    auto lse_at = [&](int s) { return lse[s]; };
    const float merged = attn_k::merged_lse<1>(0, splits, lse_at, identity, identity);
    if (keys == 0) {
      EXPECT_EQ(merged, ninf);
    } else {
      double sum = 0;
      for (double x : score) sum += std::exp(x - top);
      EXPECT_NEAR(merged, top + std::log(sum), 1e-4 * std::max(1.0, std::abs(top))) << trial;
    }
    for (int c = 0; c < d; ++c) {
      const float got = attn_k::merged_o(splits, merged, lse_at, [&](int s) { return o[size_t(s) * d + c]; });
      double want = 0;
      if (keys > 0) {
        double sum = 0;
        for (int j = 0; j < keys; ++j) sum += std::exp(score[j] - top);
        for (int j = 0; j < keys; ++j) want += std::exp(score[j] - top) / sum * value[size_t(j) * d + c];
      }
      EXPECT_TRUE(std::isfinite(got)) << trial;
      EXPECT_NEAR(got, want, 2e-5 * std::sqrt(double(splits)) + 1e-6) << trial << " col " << c;
    }
  }
}

// The combine kernel alone, at O's head dims narrower, as wide as and wider than its block (one,
// two or three split shares a column; one or two columns a thread), with O's own strides and not,
// for both NVIDIA targets: it compiles, and its round of partial O held in registers does not spill.
TEST(DecodeCombine, CompilesWithoutSpillsAtEveryValueDim) {
  const temp_dir dir("attn-tune-combine");
  const compile_cache cache(dir.path().string());
  for (const char* arch : {"sm_80", "sm_90a"})
    for (int dv : {32, 40, 64, 96, 128, 160, 256})
      for (bool own_dv : {false, true}) {
        problem s = decode(2, 8, 2, 1, 1000, 128);
        s.head_dim_v = dv;
        const std::string source =
            "#include \"common/combine.cuh\"\n" +
            combine_stub("combine", "const __grid_constant__ attn_k::fwd_params p", "p", s, own_dv);
        const compile_result r = compile_cubin(source, arch, {"--use_fast_math"}, cache.kernels());
        ASSERT_TRUE(r.ok) << arch << " dv " << dv << ": " << r.log;
        const ptxas_report used = cuda_resources(r.log, r.cubin);
        EXPECT_GT(used.registers, 0) << arch << " dv " << dv;
        EXPECT_EQ(used.spill_bytes, 0) << arch << " dv " << dv << ": " << r.log;
        EXPECT_EQ(used.stack_bytes, 0) << arch << " dv " << dv << ": " << r.log;
      }
}

// Two blocks an SM (schedule bit 32, NOTES D10; opt-in, not in a default space): one computing
// warpgroup, launch bounds of 2, the hand-over within half the register file, and half the SM's
// shared memory a block.
TEST(DecodeHopper, TwoBlocksAnSmHalveTheHandOverAndCompileWithoutSpills) {
  EXPECT_EQ(hopper_blocks_per_sm({64, 64, 8, 2, 33}), 2);
  EXPECT_EQ(hopper_blocks_per_sm({64, 64, 8, 2, 5}), 1);
  EXPECT_EQ(hopper_consumer_registers({64, 64, 8, 2, 33}), 224);  // (128 x 256 - 32 x 128) / 128
  EXPECT_EQ(hopper_consumer_registers({64, 64, 8, 2, 1}), 256);
  // The block's hand-over fits what it holds at launch (else setmaxnreg.inc waits forever).
  EXPECT_LE(hopper_consumer_registers({64, 64, 8, 2, 33}) * 128 + 32 * 128, attn_k::launch_registers(256, 2) * 256);
  const kernel_family& f = hopper_family();
  const resource_limits lim = limits_for_arch("sm_90a");
  const problem d = decode(1, 32, 8, 1, 32768);
  EXPECT_EQ(f.reject_reason({64, 64, 8, 2, 33, 16, 1}, d, lim).value_or(""), "");
  EXPECT_NE(f.reject_reason({128, 64, 12, 2, 33}, decode(1, 64, 8, 16, 32768, 128, true), lim).value_or("")
                .find("two blocks an SM (schedule bit 32) needs one computing warpgroup (block_m 64), block_m 128"),
            std::string::npos);
  EXPECT_NE(f.reject_reason({64, 128, 8, 2, 33, 16, 1}, d, lim).value_or("").find("exceeds half the SM's"),
            std::string::npos);  // Q 16 KiB, two stages of 64 KiB, O 16 KiB: 161 KiB
  // O is staged in Q's tile where its own would not fit in half the SM's: d 192 / dv 128 takes 105 KiB.
  problem mla = decode(2, 8, 2, 16, 300, 192, true);
  mla.head_dim_v = 128;
  EXPECT_EQ(f.reject_reason({64, 64, 8, 2, 33, 7, 1}, mla, lim).value_or(""), "");
  // The instantiation's "causal, schedule, O's own tile":
  EXPECT_NE(f.instantiation({64, 64, 8, 2, 33, 7, 1}, mla).find("true, 33, false"), std::string::npos);
  EXPECT_NE(f.instantiation({64, 64, 8, 2, 1, 7, 1}, mla).find("true, 1, true"), std::string::npos);
  EXPECT_NE(f.reject_reason({64, 64, 8, 2, 512}, d, lim).value_or("").find("schedule 512 not in [0, 511]"),
            std::string::npos);
  EXPECT_NE(f.instantiation({64, 64, 8, 2, 33, 16, 1}, d).find("__launch_bounds__(256, 2)"), std::string::npos);
  EXPECT_NE(f.instantiation({64, 64, 8, 2, 1, 16, 1}, d).find("__launch_bounds__(256, 1)"), std::string::npos);
  const temp_dir dir("attn-tune-two-blocks");
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = "hopper";
  t.space = parse_space({"block_m=64", "block_n=64", "warps=8", "stages=2", "schedule=33,37", "splits=1,16",
                         "pack_gqa=0,1"},
                        f.default_space);
  const tune_result r = compile_only(d, "sm_90a", cache, t);
  int compiled = 0;
  for (const auto& rec : r.records) {
    ASSERT_NE(rec.status, status::compile_error) << name(rec.config) << ": " << rec.message;
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.spill_bytes, 0) << name(rec.config) << " spills";
    // setmaxnreg.inc's 224 is only there if the block holds 128 a thread from launch.
    EXPECT_EQ(rec.registers, 128) << name(rec.config) << ": not the launch bounds' 128 at entry";
    ++compiled;
  }
  EXPECT_EQ(compiled, 8) << describe(d);
}

// Every variant of the default decode space (for_problem) compiles, and none spills.
struct decode_compile_case {
  const char* arch;
  problem s;
  const char* family = "fa2";
};
class decode_compile : public ::testing::TestWithParam<decode_compile_case> {};
TEST_P(decode_compile, every_default_variant_compiles_without_spills) {
  const auto& [arch, s, family] = GetParam();
  const temp_dir dir("attn-tune-decode-compile");
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = family;
  t.space = find_family(family).default_space;
  const tune_result r = compile_only(s, arch, cache, t);
  int compiled = 0;
  for (const auto& rec : r.records) {
    ASSERT_NE(rec.status, status::compile_error) << name(rec.config) << ": " << rec.message;
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.spill_bytes, 0) << name(rec.config) << " spills";
    ++compiled;
  }
  EXPECT_GE(compiled, 24) << describe(s);
}
// A paged cache of `page` rows a page, and per-sequence lengths `lens`.
problem paged(problem s, int64_t page, const char* lens) {
  s.page_size = page, s.kv_lens = lens;
  return s;
}
INSTANTIATE_TEST_SUITE_P(decode, decode_compile,
                         ::testing::Values(decode_compile_case{"sm_90a", decode(8, 32, 8, 1, 8192)},
                                           decode_compile_case{"sm_90a", decode(64, 32, 8, 16, 4096, 128, true)},
                                           decode_compile_case{"sm_90a", decode(4, 16, 2, 1, 4096, 64)},
                                           decode_compile_case{"sm_80", decode(8, 32, 8, 1, 8192)}));
INSTANTIATE_TEST_SUITE_P(hopper, decode_compile,
                         ::testing::Values(decode_compile_case{"sm_90a", decode(8, 32, 8, 1, 8192), "hopper"},
                                           decode_compile_case{"sm_90a", decode(64, 32, 8, 16, 4096, 128, true), "hopper"},
                                           decode_compile_case{"sm_90a", decode(4, 16, 2, 1, 4096, 64), "hopper"},
                                           decode_compile_case{"sm_90a", paged(decode(8, 32, 8, 16, 8192, 128, true), 16,
                                                                               "uniform:1:8192"), "hopper"},
                                           decode_compile_case{"sm_90a", paged(decode(8, 32, 8, 1, 8192), 256, ""),
                                                               "hopper"},
                                           // Qwen2-7B: a group of 7, packed in 8 slots a row
                                           decode_compile_case{"sm_90a", decode(16, 28, 4, 1, 16384), "hopper"},
                                           // Llama-3-70B's speculative decode: prefill tiles, packed and not
                                           decode_compile_case{"sm_90a", decode(16, 64, 8, 16, 8192, 128, true),
                                                               "hopper"},
                                           // and at batch 1, with split-KV (short_grid_splits): 490
                                           // variants in 160 binaries, about a minute on two cores
                                           decode_compile_case{"sm_90a", decode(1, 64, 8, 16, 32768, 128, true),
                                                               "hopper"}));
INSTANTIATE_TEST_SUITE_P(
    kv_cache, decode_compile,
    ::testing::Values(decode_compile_case{"sm_90a", paged(decode(8, 32, 8, 16, 8192, 128, true), 16, "uniform:1:8192")},
                      decode_compile_case{"sm_80", paged(decode(8, 32, 8, 1, 8192), 256, "uniform:0:8192")}));

}  // namespace
}  // namespace attn
