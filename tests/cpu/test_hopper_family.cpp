// The hopper family on the host: its tensor maps' arguments (against values computed by hand), the
// refusal of what TMA cannot describe, the persistent schedule, the register hand-over and the
// pruning of what cannot compile or run.
#include <gtest/gtest.h>

#include "backend/tensor_map.hpp"
#include "codegen/family.hpp"
#include "codegen/family_hopper.hpp"

namespace attn {
namespace {

problem make(int64_t b, int64_t h, int64_t hk, int64_t n, int64_t nk, int64_t d, bool causal = false,
           layout l = layout::bhsd) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = n, s.kv_len = nk, s.head_dim = d, s.causal = causal;
  s.layout = l;
  return s;
}

TEST(tensor_map, bhsd_q_of_the_headline_shape) {
  // [4][32][4096][128] bf16: rows 256 bytes apart, heads 4096 rows, batches 32 heads; 128-byte
  // swizzle, so boxes of 64 elements (128 bytes) by BLOCK_M rows.
  const auto a = tensor_map_for(reinterpret_cast<const void*>(0x1000), true, 128, 4096, 32, 4, 128, 4096 * 128,
                                32 * 4096 * 128, 128);
  EXPECT_EQ(a.dims, (std::array<uint64_t, 4>{128, 4096, 32, 4}));
  EXPECT_EQ(a.strides, (std::array<uint64_t, 3>{256, 1048576, 33554432}));
  EXPECT_EQ(a.box, (std::array<uint32_t, 4>{64, 128, 1, 1}));
  EXPECT_EQ(a.swizzle_bytes, 128);
  EXPECT_TRUE(a.bf16);
  EXPECT_FALSE(tensor_map_problem(a).has_value());
}

TEST(tensor_map, bshd_kv_with_gqa_and_narrow_swizzles) {
  // [2][N=517][Hkv=2][D=96] fp16: a row is all kv heads (2 x 96 x 2 = 384 bytes), a head 192 bytes;
  // D = 96 takes the 64-byte swizzle (32-element boxes), D = 80 the 32-byte one (16 elements).
  const auto a = tensor_map_for(nullptr, false, 96, 517, 2, 2, 2 * 96, 96, 517 * 2 * 96, 80);
  EXPECT_EQ(a.dims, (std::array<uint64_t, 4>{96, 517, 2, 2}));
  EXPECT_EQ(a.strides, (std::array<uint64_t, 3>{384, 192, 198528}));
  EXPECT_EQ(a.box, (std::array<uint32_t, 4>{32, 80, 1, 1}));
  EXPECT_EQ(a.swizzle_bytes, 64);
  EXPECT_FALSE(a.bf16);
  EXPECT_FALSE(tensor_map_problem(a).has_value());
  EXPECT_EQ(swizzle_bytes_for(80), 32);
  EXPECT_EQ(tensor_map_for(nullptr, true, 80, 64, 1, 1, 80, 80 * 64, 80 * 64, 64).box[0], 16u);
  EXPECT_EQ(swizzle_bytes_for(256), 128);
}

TEST(tensor_map, refuses_what_tma_cannot_describe_naming_it) {
  // A row stride of 100 elements (200 bytes) is not a multiple of 16 bytes.
  auto a = tensor_map_for(nullptr, true, 64, 128, 2, 1, 100, 100 * 128, 100 * 128 * 2, 64);
  auto why = tensor_map_problem(a);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "the row stride of 200 bytes is not a multiple of 16 bytes, which TMA needs");
  a = tensor_map_for(nullptr, true, 64, 128, 2, 1, 64, 64 * 128 + 4, 64 * 128 * 2, 64);
  why = tensor_map_problem(a);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("head stride of 16392 bytes"), std::string::npos) << *why;
  a = tensor_map_for(reinterpret_cast<const void*>(0x1008), true, 64, 128, 2, 1, 64, 64 * 128, 64 * 256, 64);
  why = tensor_map_problem(a);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("not 16-byte aligned"), std::string::npos) << *why;
  a = tensor_map_for(nullptr, true, 64, 1024, 2, 1, 64, 64 * 1024, 64 * 2048, 320);
  why = tensor_map_problem(a);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "a box of 320 rows is outside TMA's [1, 256]");
}

TEST(hopper_schedule, persistent_grid_and_l2_sections) {
  // 4 x 32 x 4096 x 128 bf16, 128-row tiles: 32 query blocks x 128 heads = 4096 tiles on 132 SMs.
  // K and V of one head are 2 x 4096 x 128 x 2 = 2 MiB, half of a 50 MiB L2 holds 12 of them.
  const auto s = make(4, 32, 32, 4096, 4096, 128);
  auto h = schedule_for(s, 128, 50LL << 20, 132, true);
  EXPECT_EQ(h.m_blocks, 32);
  EXPECT_EQ(h.batch_heads, 128);
  EXPECT_EQ(h.tiles, 4096);
  EXPECT_EQ(h.grid, 132);
  EXPECT_EQ(h.heads_per_section, 12);
  EXPECT_EQ(schedule_for(s, 128, 50LL << 20, 132, false).grid, 4096);  // one block per tile
  // GQA: 8 query heads share a kv head's K and V, so 8x as many heads fit a section; a section is
  // never larger than all heads, and at least one head.
  EXPECT_EQ(schedule_for(make(1, 32, 4, 4096, 4096, 128), 128, 50LL << 20, 132, true).heads_per_section, 32);
  EXPECT_EQ(schedule_for(make(1, 2, 2, 1 << 20, 1 << 20, 256), 128, 50LL << 20, 132, true).heads_per_section, 1);
  // Fewer tiles than SMs: one block per tile either way; ragged N rounds the query blocks up.
  h = schedule_for(make(1, 3, 3, 300, 300, 64), 192, 50LL << 20, 132, true);
  EXPECT_EQ(h.m_blocks, 2);
  EXPECT_EQ(h.tiles, 6);
  EXPECT_EQ(h.grid, 6);
}

TEST(hopper_family, register_hand_over_follows_flashattention3) {
  // Two consumers and a producer (384 threads, 168 registers each at launch): 24 / 240. Three
  // (512 threads, 128 each): 32 / 160. Four (640, 96 each): (61440 - 4096) / 512 = 112. Never
  // more than the block holds from launch (setmaxnreg.inc would wait forever).
  EXPECT_EQ(hopper_consumer_registers(tile_config{128, 128, 12, 2, 5}), 240);
  EXPECT_EQ(hopper_consumer_registers(tile_config{192, 128, 16, 2, 5}), 160);
  EXPECT_EQ(hopper_consumer_registers(tile_config{256, 64, 20, 2, 5}), 112);
  for (int m : {128, 192, 256}) {
    const tile_config c{m, 64, m / 16 + 4, 2, 5};
    const int threads = c.warps * 32, launch = std::min(256, 65536 / threads / 8 * 8);
    EXPECT_LE(hopper_consumer_registers(c) * (m / 64) * 128 + 128 * 24, launch * threads) << m;
  }
}

TEST(hopper_family, rejects_what_it_cannot_express_and_says_why) {
  const resource_limits h200;
  const auto& f = hopper_family();
  const problem d128 = make(1, 2, 2, 1024, 1024, 128), d256 = make(1, 2, 2, 1024, 1024, 256);
  auto why = [&](const problem& s, int bm, int bn, int w, int st, int k) {
    return f.reject_reason(tile_config{bm, bn, w, st, k}, s, h200);
  };
  EXPECT_FALSE(why(d128, 128, 128, 12, 2, 5).has_value()) << *why(d128, 128, 128, 12, 2, 5);
  EXPECT_FALSE(why(d128, 128, 176, 12, 2, 7).has_value()) << *why(d128, 128, 176, 12, 2, 7);
  EXPECT_FALSE(why(d256, 128, 80, 12, 2, 5).has_value()) << *why(d256, 128, 80, 12, 2, 5);
  EXPECT_NE(why(d128, 128, 128, 8, 2, 5)->find("plus a producer warpgroup"), std::string::npos);
  EXPECT_NE(why(d128, 128, 128, 12, 1, 5)->find("stages 1 not in [2, 8]"), std::string::npos);
  EXPECT_NE(why(d128, 128, 128, 12, 2, 512)->find("schedule 512 not in [0, 511]"), std::string::npos);
  // Softcap's polynomial (bit 64): only where there is a softcap.
  EXPECT_NE(why(d128, 128, 128, 12, 2, 71)->find("polynomial tanh (schedule bit 64) has nothing to act on: no softcap"),
            std::string::npos);
  problem capped = d128;
  capped.softcap = 50;
  EXPECT_FALSE(why(capped, 128, 128, 12, 2, 71).has_value()) << *why(capped, 128, 128, 12, 2, 71);
  capped.dtype = dtype::fp16;  // its reference max can put P below fp16's range
  EXPECT_NE(why(capped, 128, 128, 12, 2, 71)->find("(schedule bit 64) takes bf16 only"), std::string::npos);
  // Trimmed warpgroups (bit 128): only beside a causal mask or a window, with two warpgroups or more.
  problem causal128 = d128;
  causal128.causal = true;
  EXPECT_FALSE(why(causal128, 128, 64, 12, 2, 131).has_value()) << *why(causal128, 128, 64, 12, 2, 131);
  EXPECT_NE(why(d128, 128, 64, 12, 2, 131)->find("(schedule bit 128) have nothing to act on: no causal mask or window"),
            std::string::npos);
  EXPECT_NE(why(causal128, 64, 64, 8, 2, 129)->find("(schedule bit 128) need two computing warpgroups or more, block_m 64"),
            std::string::npos);
  // Half-width first tile (bit 256): only at a window's left edge, with the overlap, block_n of 32s.
  problem window = causal128;
  window.window_left = 1024, window.window_right = 0;
  EXPECT_FALSE(why(window, 128, 128, 12, 2, 261).has_value()) << *why(window, 128, 128, 12, 2, 261);
  EXPECT_NE(why(causal128, 128, 128, 12, 2, 261)->find("(schedule bit 256) has nothing to act on: no window's left edge"),
            std::string::npos);
  EXPECT_NE(why(window, 128, 128, 12, 2, 260)->find("(schedule bit 256) needs the overlap (schedule bit 1)"),
            std::string::npos);
  EXPECT_NE(why(window, 128, 80, 12, 2, 261)->find("(schedule bit 256) needs block_n a multiple of 32, not 80"),
            std::string::npos);
  EXPECT_NE(why(d128, 128, 128, 12, 2, 32)->find("two blocks an SM (schedule bit 32) needs one computing warpgroup"),
            std::string::npos);
  // The half-width last tile (bit 16): kept where it can act, refused (a duplicate) elsewhere.
  const problem causal = make(1, 2, 2, 1024, 1024, 128, true), short_tail = make(1, 2, 2, 1050, 1050, 128),
              long_tail = make(1, 2, 2, 1000, 1000, 128);
  EXPECT_FALSE(why(causal, 128, 128, 12, 2, 23).has_value()) << *why(causal, 128, 128, 12, 2, 23);
  EXPECT_FALSE(why(short_tail, 128, 128, 12, 2, 23).has_value()) << *why(short_tail, 128, 128, 12, 2, 23);  // 26 keys
  EXPECT_NE(why(long_tail, 128, 128, 12, 2, 23)->find("N_kv 1000 leaves no last tile of at most 64"),
            std::string::npos);  // 104 keys
  EXPECT_NE(why(d128, 128, 128, 12, 2, 23)->find("nothing to act on: not causal, and N_kv 1024"), std::string::npos);
  EXPECT_NE(why(causal, 128, 176, 12, 2, 23)->find("multiple of 32, not 176"), std::string::npos);
  EXPECT_NE(why(causal, 128, 64, 12, 2, 23)->find("needs block_n >= 128 when causal"), std::string::npos);
  // Two Q tiles (bit 8): D=128 128x128 still fits with O beside them, D=256 128x80 does not at all.
  EXPECT_FALSE(why(d128, 128, 128, 12, 2, 13).has_value()) << *why(d128, 128, 128, 12, 2, 13);
  EXPECT_NE(why(d256, 128, 80, 12, 2, 13)->find("shared memory"), std::string::npos);
  EXPECT_NE(why(d128, 64, 128, 8, 2, 3)->find("ping-pong needs two computing warpgroups"), std::string::npos);
  // D=256, 192 rows: O alone is 128 of a consumer's 160 registers.
  EXPECT_NE(why(d256, 192, 80, 16, 2, 5)->find("registers per thread"), std::string::npos);
  // Softcap's margin: D=256 causal keeps the dense kernel's 128x64 with the overlap (ptxas: no
  // spills), D=96 drops 128x176 (it spilled 24-80 bytes) and D=64 drops 192x128 with the overlap.
  problem capped256 = make(1, 2, 2, 1024, 1024, 256, true), capped96 = make(1, 2, 2, 1024, 1024, 96),
          capped64 = make(1, 2, 2, 1024, 1024, 64);
  capped256.softcap = capped96.softcap = capped64.softcap = 50;
  EXPECT_FALSE(why(capped256, 128, 64, 12, 2, 3).has_value()) << *why(capped256, 128, 64, 12, 2, 3);
  EXPECT_FALSE(why(make(1, 2, 2, 1024, 1024, 96), 128, 176, 12, 2, 3).has_value());
  EXPECT_NE(why(capped96, 128, 176, 12, 2, 3)->find("registers per thread"), std::string::npos);
  EXPECT_NE(why(capped64, 192, 128, 16, 2, 3)->find("registers per thread"), std::string::npos);
  // D=128, 192-key tiles in 3 stages: Q + 3 x (K + V) = 32 + 6 x 48 KiB.
  EXPECT_NE(why(d128, 128, 192, 12, 3, 0)->find("shared memory"), std::string::npos);
  resource_limits ampere;
  ampere.cc_major = 8;
  EXPECT_EQ(*f.reject_reason(tile_config{128, 128, 12, 2, 5}, d128, ampere), "hopper needs sm_90a (Hopper)");
  EXPECT_TRUE(runs_on(f, 9, 0));
  EXPECT_FALSE(runs_on(f, 8, 0));
  EXPECT_FALSE(runs_on(f, 10, 0));
}

TEST(hopper_family, shared_memory_keeps_o_beside_q_when_it_fits) {
  const auto& f = hopper_family();
  // D=128, 128 x 128, 2 stages: Q and O (32 KiB each), 4 K/V tiles (32 KiB each), 10 barriers.
  EXPECT_EQ(f.shared_memory_bytes(tile_config{128, 128, 12, 2, 5}, make(1, 1, 1, 64, 64, 128)),
            (2 * 128 + 4 * 128) * 128 * 2 + 10 * 8 + 1024);
  // D=256, 128 x 80: O beside Q would not fit in 227 KiB, so O is staged in Q's tile.
  EXPECT_EQ(f.shared_memory_bytes(tile_config{128, 80, 12, 2, 5}, make(1, 1, 1, 64, 64, 256)),
            (128 + 4 * 80) * 256 * 2 + 10 * 8 + 1024);
  // Two Q tiles: D=64 128 x 128, 3 stages: 2 Q + O + 6 K/V tiles of 16 KiB, 16 barriers.
  EXPECT_EQ(f.shared_memory_bytes(tile_config{128, 128, 12, 3, 13}, make(1, 1, 1, 64, 64, 64)),
            (3 * 128 + 6 * 128) * 64 * 2 + 16 * 8 + 1024);
}

}  // namespace
}  // namespace attn
