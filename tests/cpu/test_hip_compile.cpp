// The AMD path without an AMD GPU: hiprtc compiles every default-space mfma variant and the
// support module (reference, inputs, poison, errors) for gfx90a, and the resource report comes
// from the code object. Skipped in a build without HIP.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/hip/amdgpu_metadata.hpp"
#include "codegen/hiprtc.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {
namespace {

TEST(amdgpu_metadata, reads_msgpack_integers_after_their_keys) {
  // fixint, uint8 (0xcc), uint16 (0xcd) as the metadata note encodes them.
  // The literals' own lengths (sizeof less the terminator): their last byte is a 0 value.
  static constexpr char sizes[] = "\xab.vgpr_count\x10\xab.agpr_count\xcc\x80\xb9.group_segment_fixed_size\xcd\xcc\x00";
  static constexpr char spills[] = "\xb1.vgpr_spill_count\x00";
  const std::string note = std::string(sizes, sizeof sizes - 1) + std::string(spills, sizeof spills - 1);
  const auto r = parse_amdgpu_resources(note);
  EXPECT_EQ(r.vgprs, 16);
  EXPECT_EQ(r.agprs, 128);
  EXPECT_EQ(r.lds_bytes, 0xcc00);
  EXPECT_EQ(r.vgpr_spills, 0);
  EXPECT_EQ(r.sgprs, -1);  // absent
}

struct hip_case {
  int head_dim;
  bool causal;
  dtype type;
};

class mfma_default_space : public ::testing::TestWithParam<hip_case> {};

TEST_P(mfma_default_space, every_variant_compiles_for_gfx90a) {
  if (!hip_available()) GTEST_SKIP() << "built without HIP (libamdhip64-dev, libhiprtc-builtins5)";
  const auto [d, causal, type] = GetParam();
  problem s;
  s.batch = 2, s.heads = 8, s.kv_heads = 2, s.q_len = s.kv_len = 1024, s.head_dim = d;
  s.causal = causal, s.dtype = type;
  const temp_dir dir("attn-tune-hip-test-" + std::to_string(d));  // unique: parallel runs never share it
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = "mfma";
  t.space = mfma_family().default_space;
  const tune_result r = compile_only(s, "gfx90a", cache, t);
  int compiled = 0;
  for (const auto& rec : r.records) {
    ASSERT_NE(rec.status, status::compile_error) << name(rec.config) << ": " << rec.message;
    if (rec.status != status::compiled) continue;
    ++compiled;
    EXPECT_GT(rec.registers, 0) << name(rec.config);  // VGPRs, from the code object's metadata
    EXPECT_EQ(rec.device.arch, "gfx90a");
    EXPECT_EQ(rec.family, "mfma");
  }
  EXPECT_GE(compiled, d == 256 ? 1 : 4) << r.pruning;  // D=256 fits 64 KiB of LDS in 32x32 tiles only
  const tune_result again = compile_only(s, "gfx90a", cache, t);  // the cache works for HIP too
  EXPECT_EQ(again.cached, compiled);
  EXPECT_EQ(again.records.front().registers, r.records.front().registers);
}

INSTANTIATE_TEST_SUITE_P(gfx90a, mfma_default_space,
                         ::testing::Values(hip_case{64, false, dtype::bf16}, hip_case{128, true, dtype::bf16},
                                           hip_case{128, false, dtype::fp16}, hip_case{256, true, dtype::fp16}),
                         [](const ::testing::TestParamInfo<hip_case>& info) {
                           return "d" + std::to_string(info.param.head_dim) + (info.param.causal ? "_causal_" : "_") +
                                  to_string(info.param.type);
                         });

// AMD's own axis: waves_per_eu=2 asks for two wavefronts per SIMD, which leaves each at most 256
// of the 512 VGPRs. The 128-row, 2-wavefront config needs more than that without the knob.
TEST(mfma_knob, waves_per_eu_is_an_axis_and_caps_the_registers) {
  const search_space space = mfma_family().default_space;
  EXPECT_EQ(space.knob_name, "waves_per_eu");
  EXPECT_EQ(space.knob, (std::vector<int>{0, 2}));
  EXPECT_EQ(parse_space({"waves_per_eu=0,1,4"}, space).knob, (std::vector<int>{0, 1, 4}));
  EXPECT_THROW(parse_space({"waves_per_eu=2"}, default_space()), invalid_input);  // fa2 has no such axis
  EXPECT_EQ(name(tile_config{128, 32, 2, 1, 2}), "m128_n32_w2_s1_k2");
  EXPECT_EQ(parse_config_name("m128_n32_w2_s1_k2"), (tile_config{128, 32, 2, 1, 2}));
  EXPECT_EQ(name(tile_config{128, 32, 2, 1, 0}), "m128_n32_w2_s1");
  {
    problem small;
    small.batch = small.heads = small.kv_heads = 1, small.q_len = small.kv_len = 64, small.head_dim = 64;
    const auto why = mfma_family().reject_reason(tile_config{64, 32, 2, 1, 9}, small, limits_for_arch("gfx90a"));
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why, "waves_per_eu 9 not in [0, 8]");
  }
  if (!hip_available()) GTEST_SKIP() << "built without HIP";
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 512, s.head_dim = 128;
  const compile_cache no_cache("");
  tune_options t;
  t.family = "mfma";
  t.configs = {tile_config{128, 32, 2, 1, 0}, tile_config{128, 32, 2, 1, 2}};
  const tune_result r = compile_only(s, "gfx90a", no_cache, t);
  ASSERT_EQ(r.records.size(), 2u);
  for (const auto& rec : r.records) ASSERT_EQ(rec.status, status::compiled) << name(rec.config) << ": " << rec.message;
  EXPECT_GT(r.records[0].registers, 256) << "without the knob this config used to take more than 256 VGPRs";
  EXPECT_LE(r.records[1].registers, 256);
}

TEST(hiprtc, support_module_compiles_for_gfx90a) {
  if (!hip_available()) GTEST_SKIP() << "built without HIP";
  const compile_cache no_cache("");
  for (dtype t : {dtype::bf16, dtype::fp16}) {
    const auto r = compile_code_object(support_source(), "gfx90a", support_options(t), no_cache.kernels());
    ASSERT_TRUE(r.ok) << to_string(t) << ":\n" << r.log;
    // Every entry point load_support looks up is in the code object's symbol table.
    for (const char* entry : {"ref_scores_full", "ref_scores_lowp", "ref_softmax_full", "ref_softmax_lowp", "ref_pv_full",
                              "ref_pv_lowp", "fill_inputs", "poison", "error_elem", "error_f32"})
      EXPECT_NE(r.cubin.find(std::string(entry) + '\0'), std::string::npos) << entry;
  }
}

TEST(hiprtc, unknown_targets_are_refused_not_crashed_on) {
  if (!hip_available()) GTEST_SKIP() << "built without HIP";
  const compile_cache no_cache("");
  const auto r = compile_code_object("extern \"C\" __global__ void k() {}", "gfx942", {}, no_cache.kernels());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("gfx942"), std::string::npos) << r.log;
}

}  // namespace
}  // namespace attn
