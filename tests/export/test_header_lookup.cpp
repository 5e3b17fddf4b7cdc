// The header written by `attn-tune export --format header` (from tests/data/export_fixture.csv,
// real H200 results, merged with tests/data/export_pass_fixture.csv, made-up backward rows of one of
// its shapes) compiles on its own, and lookup() returns exactly the tuned configs for tuned shapes
// and the documented fallback, with its flag set, for everything else.
#include "attn_tuned_fixture.hpp"  // generated at build time; includes nothing of attn-tune

#include <gtest/gtest.h>

#include <string>

namespace {

// The fixture's configs and the fallback are all fa2's.
bool same(attn_tuned::config a, attn_tuned::config b) {
  return std::string(a.family) == "fa2" && a.block_m == b.block_m && a.block_n == b.block_n &&
         a.warps == b.warps && a.stages == b.stages;
}

TEST(exported_header, tuned_shapes_get_their_tuned_config) {
  bool fell_back = true;
  // 4,32,4096,128 non-causal: rank 1 in results/h200/2026-11-30-yardstick was m256_n64_w8_s2.
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  // The bucket (2048, 4096] covers every length in it.
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, 2049, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 64, true, 1024, &fell_back),
                   {"fa2", 64, 64, 4, 2}));
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 256, false, 4096, &fell_back),
                   {"fa2", 128, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
}

// The keys since the sliding window and softcap: an export from before them holds entries of no
// window and no softcap, which the full lookup finds at (-1, -1, 0) and the older lookup (without
// those keys) finds as before; a window or softcap nothing was tuned for falls back.
TEST(exported_header, window_and_softcap_are_keys) {
  bool fell_back = true;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 4096, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, 1024, -1, 0.0, 4096, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
  fell_back = true;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 50.0, 4096, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
}

// dv (head_dim_v, 0: the head dim) is the last key: the full lookup takes it and both lengths;
// the window-and-softcap call of before it keeps its meaning (N_q, N_kv), and a dv nothing was
// tuned for falls back.
TEST(exported_header, value_dim_is_a_key) {
  bool fell_back = true;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 0, 4096, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  fell_back = true;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 4096, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  fell_back = true;
  // N_q 2049 in the bucket (2048, 4096], N_kv 4096: the older call is still (N_q, N_kv).
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 2049, 4096, &fell_back),
                   {"fa2", 256, 64, 8, 2}));
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, -1, -1, 0.0, 64, 4096, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
}

// The pass (schema 10) is the last key, after dv: the full lookup takes it and both lengths. The fixture
// has 4,32,4096,128 bf16 non-causal tuned three times: fwd m256_n64_w8_s2 (the H200's), bwd
// m64_n128_w8_s2 and fwdbwd m128_n128_w8_s1 (made up); each pass finds its own, and a pass nothing
// was tuned for at a shape falls back. The older calls, without the pass, mean fwd: the tests above
// find that shape's forward config through each of them.
TEST(exported_header, the_pass_is_a_key) {
  struct probe {
    const char* pass;
    int head_dim;
    bool causal;
    long long n;  // N_q and N_kv
    attn_tuned::config want;
    bool tuned;
  };
  const probe probes[] = {
      {"fwd", 128, false, 4096, {"fa2", 256, 64, 8, 2}, true},
      {"bwd", 128, false, 4096, {"fa2", 64, 128, 8, 2, 0, 1, 0, "kv_m64_n128_w8_s2-q_m64_n64_w4_s2"}, true},
      {"fwdbwd", 128, false, 2049, {"fa2", 128, 128, 8, 1}, true},
      // Another shape, whose forward was tuned: its backward falls back, to the backward's fallback.
      {"fwd", 64, true, 1024, {"fa2", 64, 64, 4, 2}, true},
      {"bwd", 64, true, 1024, {"fa2", 32, 64, 4, 2, 0, 1, 0, "kv_m32_n64_w4_s2-q_m64_n64_w4_s2"}, false},
      {"bwd", 256, true, 1024, {"fa2", 32, 64, 4, 2, 0, 1, 0, "kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1"}, false},
  };
  for (const probe& p : probes) {
    bool fell_back = p.tuned;
    EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", p.head_dim, p.causal, -1, -1, 0.0, 0, p.pass,
                                        p.n, p.n, &fell_back),
                     p.want))
        << p.pass << " D=" << p.head_dim;
    EXPECT_EQ(fell_back, !p.tuned) << p.pass << " D=" << p.head_dim;
    // A backward's whole variant (the dQ kernel's tile too); none for the forward.
    const attn_tuned::config got = attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", p.head_dim, p.causal, -1, -1,
                                                      0.0, 0, p.pass, p.n, p.n);
    EXPECT_EQ(std::string(got.variant ? got.variant : ""), std::string(p.want.variant ? p.want.variant : ""))
        << p.pass << " D=" << p.head_dim;
  }
}

TEST(exported_header, untuned_shapes_get_the_documented_fallback) {
  bool fell_back = false;
  // Outside the tuned bucket, another causality, another dtype, another device, another head dim.
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, false, 4097, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
  fell_back = false;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 128, true, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
  fell_back = false;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "fp16", 128, false, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
  fell_back = false;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H100 80GB HBM3", 9, 0, 132, "bf16", 128, false, 4096, &fell_back),
                   {"fa2", 128, 64, 4, 2}));
  EXPECT_TRUE(fell_back);
  fell_back = false;
  EXPECT_TRUE(same(attn_tuned::lookup("NVIDIA H200", 9, 0, 132, "bf16", 192, false, 4096, &fell_back),
                   {"fa2", 64, 64, 4, 1}));
  EXPECT_TRUE(fell_back);
}

// Issue 20, item 2: the bucket (seq_min, seq_max] at each bound and one past it, in the header.
TEST(exported_header, each_bucket_holds_its_upper_bound_and_not_its_lower) {
  struct probe {
    const char* dtype;
    int head_dim;
    bool causal;
    long long n;
    bool tuned;
  };
  const probe probes[] = {
      {"bf16", 128, false, 4096, true}, {"bf16", 128, false, 4097, false}, {"bf16", 128, false, 2049, true},
      {"bf16", 128, false, 2048, false}, {"bf16", 64, true, 1024, true},   {"bf16", 64, true, 1025, false},
      {"bf16", 64, true, 513, true},     {"bf16", 64, true, 512, false},   {"bf16", 256, false, 4096, true},
      {"bf16", 256, false, 2048, false}, {"bf16", 256, false, 4097, false},
  };
  for (const probe& p : probes) {
    bool fell_back = p.tuned;
    attn_tuned::lookup("NVIDIA H200", 9, 0, 132, p.dtype, p.head_dim, p.causal, p.n, &fell_back);
    EXPECT_EQ(fell_back, !p.tuned) << "D=" << p.head_dim << " causal=" << p.causal << " N=" << p.n;
  }
  // Another compute capability or SM count of the same name is another device.
  bool fell_back = false;
  attn_tuned::lookup("NVIDIA H200", 9, 1, 132, "bf16", 128, false, 4096, &fell_back);
  EXPECT_TRUE(fell_back);
  fell_back = false;
  attn_tuned::lookup("NVIDIA H200", 9, 0, 114, "bf16", 128, false, 4096, &fell_back);
  EXPECT_TRUE(fell_back);
}

// A packed bucket winner (the key has no head counts) for a problem that cannot pack: for_heads()
// gives the same tile unpacked and unsplit; a GQA problem keeps it as tuned, and a config that
// does not pack keeps its splits unless the batch is packed (varlen).
TEST(exported_header, for_heads_unpacks_what_the_heads_cannot_pack) {
  const attn_tuned::config packed{"hopper", 128, 128, 12, 2, 0, 4, 1};
  auto is = [](attn_tuned::config c, int splits, int pack_gqa) {
    return std::string(c.family) == "hopper" && c.block_m == 128 && c.block_n == 128 && c.warps == 12 &&
           c.stages == 2 && c.splits == splits && c.pack_gqa == pack_gqa;
  };
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 32, 8), 4, 1));     // GQA 4: as tuned
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 48, 1), 4, 1));     // MQA, 48 heads
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 32, 32), 1, 0));    // MHA
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 64, 1), 4, 1));     // hopper: a group of 64 packs
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 65, 1), 1, 0));     // and one over 64 does not
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 128, 1), 1, 0));
  EXPECT_TRUE(is(attn_tuned::for_heads(packed, 32, 8, true), 1, 0));  // varlen
  attn_tuned::config fa2 = packed;
  fa2.family = "fa2";
  EXPECT_EQ(attn_tuned::for_heads(fa2, 128, 1).pack_gqa, 1);  // fa2 packs any group
  const attn_tuned::config split{"hopper", 128, 128, 12, 2, 0, 4, 0};
  EXPECT_TRUE(is(attn_tuned::for_heads(split, 32, 32), 4, 0));  // splits alone serve MHA
  EXPECT_TRUE(is(attn_tuned::for_heads(split, 32, 32, true), 1, 0));
}

}  // namespace
