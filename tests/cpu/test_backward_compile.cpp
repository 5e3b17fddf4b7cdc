// The backward pass's kernels (kernels/fa2_bwd.cuh, and wgmma_bwd.cuh for sm_90a) compile with NVRTC
// for sm_80 and sm_90a at head dims 64 to 256, causal and not, without spills or serialized wgmmas,
// and the pruning and names say what they should.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "codegen/kernel_args.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/nvrtc.hpp"
#include "../backward_defects.hpp"
#include "invalid_input_message.hpp"
#include "temp_dir.hpp"
#include "timing_runtime.hpp"

namespace attn {
namespace {

problem backward_problem(int64_t d, bool causal, double softcap = 0, int64_t dv = 0, bool packed = false) {
  problem s;
  s.batch = 2, s.heads = 8, s.kv_heads = 2, s.q_len = 1000, s.kv_len = 1200, s.head_dim = d;
  s.causal = causal;
  s.softcap = softcap;
  s.head_dim_v = dv;
  if (packed) s.seqlens = "1000/300", s.kv_seqlens = "1200/800";
  return s;
}

struct backward_compile_case {
  const char* arch;
  int head_dim;
  bool causal;
  double softcap = 0;  ///< the SOFTCAP instantiations: one more packed operand a step
  int head_dim_v = 0;  ///< V's own head dim (both families' DV)
  bool packed = false;  ///< a packed variable-length batch (both families' VARLEN)
};

class backward_compiles : public ::testing::TestWithParam<backward_compile_case> {};

TEST_P(backward_compiles, every_default_variant_compiles_without_spills) {
  const auto [arch, d, causal, softcap, dv, packed] = GetParam();
  if (!nvrtc_supports(arch)) GTEST_SKIP() << "NVRTC " << nvrtc_version() << " cannot compile for " << arch;
  const problem s = backward_problem(d, causal, softcap, dv, packed);
  const temp_dir dir("attn-tune-backward-compile");
  const compile_cache cache(dir.path().string());
  const resource_limits limits = limits_for_arch(arch);
  int compiled = 0;
  for (const backward_config& c : backward_default_configs(s)) {
    if (backward_reject(c, s, limits)) continue;
    const cached_compile r = compile_with_cache(cache, backward_instantiation(c, s), arch, backward_compile_options());
    ASSERT_TRUE(r.result.ok) << name(c) << ":\n" << r.result.log;
    EXPECT_GT(r.result.registers, 0) << name(c);
    EXPECT_EQ(r.result.spill_bytes, 0) << name(c) << " spills:\n" << r.result.log;
    EXPECT_EQ(ptxas_performance_warning(r.result.log), "") << name(c);  // wgmma serialized
    ++compiled;
  }
  EXPECT_GT(compiled, 0) << "the pruner kept no variant at D=" << d;
}

INSTANTIATE_TEST_SUITE_P(
    archs, backward_compiles,
    ::testing::Values(backward_compile_case{"sm_90a", 64, false}, backward_compile_case{"sm_90a", 64, true},
                      backward_compile_case{"sm_90a", 128, false}, backward_compile_case{"sm_90a", 128, true},
                      backward_compile_case{"sm_90a", 96, true}, backward_compile_case{"sm_90a", 192, false},
                      backward_compile_case{"sm_90a", 256, false}, backward_compile_case{"sm_90a", 256, true},
                      backward_compile_case{"sm_80", 64, false}, backward_compile_case{"sm_80", 64, true},
                      backward_compile_case{"sm_80", 128, false}, backward_compile_case{"sm_80", 128, true},
                      backward_compile_case{"sm_80", 256, false}, backward_compile_case{"sm_80", 256, true},
                      backward_compile_case{"sm_90a", 64, true, 30}, backward_compile_case{"sm_90a", 128, false, 30},
                      backward_compile_case{"sm_90a", 256, true, 30}, backward_compile_case{"sm_80", 128, true, 30},
                      backward_compile_case{"sm_90a", 192, true, 0, 128}, backward_compile_case{"sm_80", 192, false, 0, 128},
                      backward_compile_case{"sm_90a", 64, true, 0, 128}, backward_compile_case{"sm_80", 128, true, 0, 64},
                      backward_compile_case{"sm_90a", 128, true, 0, 0, true}, backward_compile_case{"sm_90a", 64, false, 30, 0, true},
                      backward_compile_case{"sm_80", 64, false, 30, 128, true},
                      backward_compile_case{"sm_80", 64, false, 30, 128, false}, backward_compile_case{"sm_80", 64, false, 0, 128, true},
                      backward_compile_case{"sm_90a", 192, true, 30, 128, true},  // split dK/dV, all three
                      backward_compile_case{"sm_90a", 192, true, 30, 128, false}, backward_compile_case{"sm_90a", 192, true, 0, 128, true},
                      // wgmma's dv: softcap at 128 / 64, and 128- and 64-byte swizzles side by side
                      backward_compile_case{"sm_90a", 128, true, 30, 64}, backward_compile_case{"sm_90a", 128, false, 0, 96},
                      backward_compile_case{"sm_90a", 80, false, 0, 64}),
    [](const auto& info) {
      return fmt::format("{}_d{}_{}{}{}{}", info.param.arch, info.param.head_dim, info.param.causal ? "causal" : "full",
                         info.param.softcap > 0 ? "_softcap" : "",
                         info.param.head_dim_v > 0 ? fmt::format("_dv{}", info.param.head_dim_v) : "",
                         info.param.packed ? "_packed" : "");
    });

// wgmma's pruner takes one-launch dK/dV variants at d 192 / dv 128 that the default list (split
// there) does not hold: at the register limit ((192 + 128) / 2 + 32 = 192), they compile without spills.
TEST(backward_compiles_beyond_the_defaults, wgmma_one_launch_dkdv_at_d192_dv128) {
  if (!nvrtc_supports("sm_90a")) GTEST_SKIP() << "NVRTC " << nvrtc_version() << " cannot compile for sm_90a";
  const problem s = backward_problem(192, true, 0, 128);
  const temp_dir dir("attn-tune-backward-compile-dv");
  const compile_cache cache(dir.path().string());
  for (const char* text : {"wg_kv_m32_n64_w4_s2-q_m64_n64_w4_s2", "wg_kv_m32_n128_w8_s2-q_m64_n32_w4_s2"}) {
    const backward_config c = parse_backward_config(text);
    ASSERT_FALSE(backward_reject(c, s, limits_for_arch("sm_90a"))) << text;
    const cached_compile r = compile_with_cache(cache, backward_instantiation(c, s), "sm_90a", backward_compile_options());
    ASSERT_TRUE(r.result.ok) << text << ":\n" << r.result.log;
    EXPECT_EQ(r.result.spill_bytes, 0) << text << " spills:\n" << r.result.log;
    EXPECT_EQ(ptxas_performance_warning(r.result.log), "") << text;
  }
}

// The warp-specialized dK/dV kernel (opt-in): its name, what it refuses, its shared memory (a second
// dS^T tile and the ring's barriers), and that it compiles for sm_90a with the launch bounds' 168
// registers at entry, at D 128 causal and not, with softcap and a packed batch, without spills
// (its computing warpgroups get 224 registers, S^T's and dP^T's accumulators live together).
TEST(backward_compiles_beyond_the_defaults, warp_specialized_atomic_dkdv) {
  const backward_config ws = parse_backward_config("wg_kv_m64_n128_w12_s2-dq_atomic");
  EXPECT_TRUE(warp_specialized(ws));
  EXPECT_EQ(name(ws), "wg_kv_m64_n128_w12_s2-dq_atomic");
  EXPECT_FALSE(warp_specialized(parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic")));
  const resource_limits limits = limits_for_arch("sm_90a");
  const problem d128 = backward_problem(128, true);
  EXPECT_FALSE(backward_reject(ws, d128, limits));
  EXPECT_EQ(backward_dkdv_shared_bytes(ws, d128) -
                backward_dkdv_shared_bytes(parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic"), d128),
            2 * 128 * 64 + 16 * 2);
  EXPECT_NE(backward_reject(parse_backward_config("wg_kv_m64_n64_w8_s2-dq_atomic"), d128, limits)
                .value_or("").find("warp-specialized dK/dV kernel: 64 keys; it takes 128"),
            std::string::npos);
  EXPECT_NE(backward_reject(parse_backward_config("wg_kv_m64_n128_w12_s2-q_m64_n64_w4_s2"), d128, limits)
                .value_or("").find("a producer warpgroup beside them: 12 warps"),
            std::string::npos);  // without atomic dQ there is no warp-specialized kernel
  EXPECT_TRUE(backward_reject(ws, backward_problem(64, true), limits));  // D 64: 32 dQ columns a warpgroup
  EXPECT_EQ(backward_launches(ws, d128)[1].block.x, 384u);
  if (!nvrtc_supports("sm_90a")) GTEST_SKIP() << "NVRTC " << nvrtc_version() << " cannot compile for sm_90a";
  const temp_dir dir("attn-tune-backward-compile-ws");
  const compile_cache cache(dir.path().string());
  for (const problem& s : {d128, backward_problem(128, false), backward_problem(128, true, 30),
                           backward_problem(128, true, 0, 0, true)})
    for (const char* text : {"wg_kv_m64_n128_w12_s2-dq_atomic", "wg_kv_m64_n128_w12_s3-dq_atomic"}) {
      const backward_config c = parse_backward_config(text);
      ASSERT_FALSE(backward_reject(c, s, limits)) << text << " " << describe(s);
      const cached_compile r = compile_with_cache(cache, backward_instantiation(c, s), "sm_90a", backward_compile_options());
      ASSERT_TRUE(r.result.ok) << text << ":\n" << r.result.log;
      EXPECT_EQ(r.result.registers, 168) << text << ": not the launch bounds' 168 at entry";
      EXPECT_EQ(r.result.spill_bytes, 0) << text << " " << describe(s) << " spills:\n" << r.result.log;
      EXPECT_EQ(ptxas_performance_warning(r.result.log), "") << text << " " << describe(s);  // wgmma serialized
    }
}

TEST(backward_config, names_round_trip_and_bad_text_is_named) {
  for (const int64_t d : {64, 256})
    for (const backward_config& c : backward_default_configs(backward_problem(d, false)))
      EXPECT_EQ(parse_backward_config(name(c)), c);
  const std::string why = testing::invalid_input_message([] { parse_backward_config("kv_m64_n64_w4"); });
  EXPECT_NE(why.find("'kv_m64_n64_w4'"), std::string::npos) << why;
}

// The wgmma backward's instantiation names DV (wg_bwd_config's last argument, after VARLEN) only
// when dv != d: without it the source is the one before DV existed.
TEST(backward_config, wgmma_names_dv_last_and_only_when_it_differs) {
  const backward_config wg = parse_backward_config("wg_kv_m64_n64_w4_s2-q_m64_n64_w4_s2");
  const backward_config atomic = parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic");
  problem s = backward_problem(192, true, 0, 128);
  std::string text = backward_instantiation(wg, s);
  EXPECT_NE(text.find("wg_bwd_config<true, 192, 64, 64, 4, 2, true, 0, false, false, false, false, 128>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("wg_bwd_config<true, 192, 64, 64, 4, 2, true, 0, false, false, false, false, 128>"),
            text.rfind("wg_bwd_config<true, 192, 64, 64, 4, 2, true, 0, false, false, false, false, 128>"))
      << "the dK/dV and the dQ kernel both name DV";
  s = backward_problem(128, true, 0, 64, true);
  text = backward_instantiation(atomic, s);
  EXPECT_NE(text.find("wg_bwd_config<true, 128, 64, 128, 8, 2, true, 0, true, false, false, true, 64>"),
            std::string::npos)
      << text;
  s.head_dim_v = 0;
  text = backward_instantiation(atomic, s);
  EXPECT_NE(text.find("wg_bwd_config<true, 128, 64, 128, 8, 2, true, 0, true, false, false, true>"), std::string::npos)
      << text;
  s = backward_problem(128, true);
  text = backward_instantiation(wg, s);
  EXPECT_NE(text.find("wg_bwd_config<true, 128, 64, 64, 4, 2, true, 0, false, false, false>"), std::string::npos)
      << text;
}

TEST(backward_config, refuses_what_it_does_not_take_naming_it) {
  const resource_limits limits = limits_for_arch("sm_90a");
  const backward_config c;
  problem s = backward_problem(128, true);
  EXPECT_FALSE(backward_reject(c, s, limits));
  s.window_left = 16;  // both families' backward take a window
  EXPECT_FALSE(backward_reject(c, s, limits));
  backward_config wg_window = c;
  wg_window.wgmma = true, wg_window.kv_block_n = 64, wg_window.kv_warps = 4, wg_window.q_block_m = 64,
  wg_window.q_warps = 4;
  EXPECT_FALSE(backward_reject(wg_window, s, limits));
  s = backward_problem(128, false, 30);  // and softcap
  EXPECT_FALSE(backward_reject(c, s, limits));
  EXPECT_FALSE(backward_reject(wg_window, s, limits));
  s = backward_problem(192, true);
  s.head_dim_v = 128;  // V's own head dim (MLA's prefill): both families'
  EXPECT_FALSE(backward_reject(parse_backward_config("kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1"), s, limits));
  EXPECT_FALSE(backward_reject(wg_window, s, limits));
  // wgmma's tiles of d and dv columns side by side must each be whole 1024-byte swizzle periods:
  // 16 rows of 80 columns are 2560 bytes.
  s = backward_problem(80, false, 0, 64);
  backward_config thin = wg_window;
  thin.kv_block_m = 16;
  EXPECT_NE(backward_reject(thin, s, limits).value_or("").find("a dK/dV step of 16 rows is not whole 1024-byte tiles"),
            std::string::npos)
      << backward_reject(thin, s, limits).value_or("taken");
  EXPECT_FALSE(backward_reject(wg_window, s, limits));
  s.head_dim_v = 72;  // wgmma: multiples of 16
  EXPECT_NE(backward_reject(wg_window, s, limits).value_or("").find("dv 72"), std::string::npos);
  EXPECT_FALSE(backward_reject(c, s, limits));
  s = backward_problem(128, true, 0, 0, true);  // a packed batch: both families'
  EXPECT_FALSE(backward_reject(c, s, limits));
  EXPECT_FALSE(backward_reject(wg_window, s, limits));
  EXPECT_FALSE(backward_reject(parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic"), s, limits));
  s = backward_problem(128, false);
  s.page_size = 16;  // a paged K/V cache: not yet
  EXPECT_NE(backward_reject(c, s, limits).value_or("").find("page_size 16"), std::string::npos);
  s = backward_problem(60, false);
  EXPECT_NE(backward_reject(c, s, limits).value_or("").find("60"), std::string::npos);
  backward_config odd = c;
  odd.kv_block_n = 48;  // 48 keys over 4 warps: 12 rows each
  EXPECT_NE(backward_reject(odd, backward_problem(64, false), limits).value_or("").find("48"), std::string::npos);
  EXPECT_FALSE(backward_reject(c, s = backward_problem(64, false), limits_for_arch("sm_80")));
  // The wgmma kernels: sm_90a only, 64 rows of the split side per warpgroup.
  backward_config wg = c;
  wg.wgmma = true, wg.kv_block_n = 64, wg.kv_warps = 4, wg.q_block_m = 64, wg.q_warps = 4;
  EXPECT_FALSE(backward_reject(wg, backward_problem(128, true), limits));
  EXPECT_NE(backward_reject(wg, backward_problem(128, true), limits_for_arch("sm_80")).value_or("").find("sm_90a"),
            std::string::npos);
  wg.kv_block_n = 32;
  EXPECT_NE(backward_reject(wg, backward_problem(64, false), limits).value_or("").find("64 keys"), std::string::npos);
  EXPECT_EQ(name(parse_backward_config("wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2")), "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2");
  // Atomic dQ: the wgmma dK/dV kernel's, 64 queries a step, whole 64-column pieces per warpgroup.
  const backward_config atomic = parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic");
  EXPECT_TRUE(atomic.atomic_dq && atomic.wgmma && atomic.kv_block_n == 128 && atomic.q_block_m == 0);
  EXPECT_EQ(name(atomic), "wg_kv_m64_n128_w8_s2-dq_atomic");
  EXPECT_FALSE(deterministic(atomic));
  EXPECT_TRUE(deterministic(wg));
  EXPECT_FALSE(backward_reject(atomic, backward_problem(128, true), limits));
  EXPECT_EQ(backward_dq_shared_bytes(atomic, backward_problem(128, true)), 0);
  EXPECT_NE(backward_reject(atomic, backward_problem(64, false), limits).value_or("").find("32 columns"), std::string::npos);
  backward_config fa2_atomic = atomic;
  fa2_atomic.wgmma = false;
  EXPECT_NE(backward_reject(fa2_atomic, backward_problem(128, false), limits).value_or("").find("wgmma"), std::string::npos);
  backward_config wide_step = atomic;
  wide_step.kv_block_m = 32;
  EXPECT_NE(backward_reject(wide_step, backward_problem(128, false), limits).value_or("").find("64 queries"), std::string::npos);
  EXPECT_EQ(backward_launches(atomic, backward_problem(128, false)).size(), 3u);  // delta, dK/dV (+dQ), convert
}

// run_backward refuses an atomic-dQ variant whose fp32 dQ workspace is missing, before it launches
// anything (its kernels would add to address 0), and runs the others without one.
TEST(run_backward, an_atomic_variant_without_its_dq_workspace_is_refused_before_any_launch) {
  const problem s = backward_problem(128, true);
  timing_runtime rt;
  const backward_config atomic = parse_backward_config("wg_kv_m64_n128_w8_s2-dq_atomic");
  ASSERT_TRUE(atomic.atomic_dq);
  const loaded_backward b = load_backward(rt, "an image", atomic, s, 0);
  ASSERT_TRUE(b.atomic_dq);
  attn_k::bwd_params p{};
  const std::string why = testing::invalid_input_message([&] { run_backward(rt, b, p, nullptr); });
  EXPECT_NE(why.find("dq_accum"), std::string::npos) << why;
  EXPECT_EQ(rt.kernel_launches, 0);

  std::vector<float> workspace(4);
  p.dq_accum = workspace.data();
  run_backward(rt, b, p, nullptr);
  EXPECT_EQ(rt.kernel_launches, static_cast<int>(b.launches.size()));

  rt.kernel_launches = 0;
  const backward_config plain = parse_backward_config("wg_kv_m64_n64_w4_s2-q_m128_n128_w8_s2");
  ASSERT_FALSE(plain.atomic_dq);
  const loaded_backward n = load_backward(rt, "an image", plain, s, 0);
  p.dq_accum = nullptr;
  run_backward(rt, n, p, nullptr);
  EXPECT_EQ(rt.kernel_launches, static_cast<int>(n.launches.size()));
}

// make_bwd_params of a packed batch wants its offsets and totals, and names what is missing; a
// packed batch above head dim 128 refuses one-stage dQ kernels, saying why.
TEST(make_bwd_params, a_packed_batch_without_its_offsets_or_totals_is_refused_naming_them) {
  const problem s = backward_problem(64, true, 0, 0, true);
  std::vector<float> memory(64);  // aligned addresses only: nothing is read
  void* at = memory.data();
  backward_tensors t;
  t.q = t.k = t.v = t.o = t.d_o = t.dq = t.dk = t.dv = at;
  t.lse = t.delta = memory.data();
  EXPECT_NE(testing::invalid_input_message([&] { make_bwd_params(s, t); }).find("cu_seqlens_q"), std::string::npos);
  const int offsets[4] = {0, 1000, 1300, 0};
  t.cu_seqlens_q = offsets, t.cu_seqlens_k = offsets;
  EXPECT_NE(testing::invalid_input_message([&] { make_bwd_params(s, t); }).find("total_q 0"), std::string::npos);
  t.total_q = 1300, t.total_kv = 2000;
  const attn_k::bwd_params p = make_bwd_params(s, t);
  EXPECT_EQ(p.cu_seqlens_q, offsets);
  EXPECT_EQ(p.total_q, 1300);
  EXPECT_EQ(p.total_k, 2000);

  const std::string why = backward_reject(parse_backward_config("kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1"),
                                          backward_problem(192, true, 0, 128, true), limits_for_arch("sm_90a"))
                              .value_or("");
  EXPECT_NE(why.find("one-stage dQ"), std::string::npos) << why;
  EXPECT_FALSE(backward_reject(parse_backward_config("kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s2"),
                               backward_problem(192, true, 0, 128, true), limits_for_arch("sm_90a")));
}

TEST(backward_planted_defects, each_anchor_is_there_once_and_the_planted_kernels_compile) {
  const problem s = [] {
    problem p = backward_problem(64, true);
    p.batch = 1, p.heads = 4, p.kv_heads = 2, p.q_len = p.kv_len = 150;
    return p;
  }();
  const kernel_sources embedded = kernel_sources::embedded();
  for (const auto& d : testing::backward_defects()) {
    auto files = embedded.files();
    int found = 0;
    for (auto& f : files) {
      if (f.name != d.file) continue;
      for (size_t at = f.text.find(d.from); at != std::string::npos; at = f.text.find(d.from, at + 1)) ++found;
      if (found == 1) f.text.replace(f.text.find(d.from), std::string(d.from).size(), d.to);
    }
    ASSERT_EQ(found, 1) << d.name << ": its anchor must occur once in " << d.file;
    const temp_dir dir("attn-tune-backward-planted");
    const compile_cache planted(dir.path().string(), kernel_sources::from_files(files, "planted"));
    const backward_config c = parse_backward_config(d.config);
    ASSERT_FALSE(backward_reject(c, s, limits_for_arch("sm_90a"))) << d.config;
    const cached_compile r = compile_with_cache(planted, backward_instantiation(c, s), "sm_90a", backward_compile_options());
    EXPECT_TRUE(r.result.ok) << d.name << ":\n" << r.result.log;
  }
}

}  // namespace
}  // namespace attn
