// NVRTC compiles every default-space fa2 variant (and the support module) for sm_80 and sm_90a,
// without a GPU, and records each one's resource report.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/compile_pool.hpp"
#include "codegen/nvrtc.hpp"
#include "run/tuner.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {
namespace {

struct compile_case {
  const char* arch;
  int head_dim;
  bool causal;
};

class compile_default_space : public ::testing::TestWithParam<compile_case> {};

TEST_P(compile_default_space, every_variant_compiles) {
  const auto [arch, d, causal] = GetParam();
  shape s;
  s.batch = 2, s.heads = 4, s.kv_heads = 4, s.q_len = s.kv_len = 1024, s.head_dim = d;
  s.causal = causal;
  // A fresh, empty cache: everything is really compiled.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("attn-tune-compile-test-" + std::string(arch) + std::to_string(d) + std::to_string(causal));
  std::filesystem::remove_all(dir);
  const compile_cache cache(dir.string());
  tune_options t;
  const tune_result r = compile_only(s, arch, cache, t);
  ASSERT_EQ(r.records.size(), default_space().enumerate().size());
  int compiled = 0;
  for (const auto& rec : r.records) {
    ASSERT_NE(rec.status, status::compile_error) << name(rec.config) << ": " << rec.message;
    if (rec.status == status::pruned) {
      EXPECT_FALSE(rec.message.empty());
      continue;
    }
    EXPECT_EQ(rec.status, status::compiled);
    EXPECT_GT(rec.registers, 0) << name(rec.config);  // ptxas's report was parsed
    EXPECT_LE(rec.registers, 255);
    EXPECT_GT(rec.shared_memory_bytes, 0);
    ++compiled;
  }
  EXPECT_GE(compiled, 20) << r.pruning;
  // A second run of the same space compiles nothing.
  const tune_result again = compile_only(s, arch, cache, t);
  EXPECT_EQ(again.cached, compiled);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    archs, compile_default_space,
    ::testing::Values(compile_case{"sm_80", 64, false}, compile_case{"sm_80", 128, true},
                      compile_case{"sm_90a", 64, true}, compile_case{"sm_90a", 128, false}),
    [](const ::testing::TestParamInfo<compile_case>& info) {
      return std::string(info.param.arch) + "_d" + std::to_string(info.param.head_dim) +
             (info.param.causal ? "_causal" : "");
    });

TEST(compile_support_module, both_dtypes_both_archs) {
  const compile_cache no_cache("");
  for (const char* arch : {"sm_80", "sm_90a"})
    for (dtype t : {dtype::bf16, dtype::fp16}) {
      const auto r = compile_cubin(support_source(), arch, support_options(t), no_cache.kernels());
      EXPECT_TRUE(r.ok) << arch << " " << to_string(t) << ": " << r.log;
    }
}

TEST(compile_errors, are_recorded_not_thrown) {
  const compile_cache no_cache("");
  const auto r = compile_cubin("this is not CUDA", "sm_90a", {}, no_cache.kernels());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
}

TEST(ptxas_report, parses_registers_and_spills) {
  const auto r = parse_ptxas_report(
      "ptxas info    : Function properties for attn_fa2\n"
      "ptxas         .     8 bytes stack frame, 196 bytes spill stores, 180 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 400 bytes cmem[0]\n");
  EXPECT_EQ(r.registers, 255);
  EXPECT_EQ(r.spill_bytes, 376);
  EXPECT_EQ(r.stack_bytes, 8);
}

TEST(nvrtc, knows_the_architectures_ci_uses) {
  EXPECT_TRUE(nvrtc_supports("sm_80"));
  EXPECT_TRUE(nvrtc_supports("sm_90a"));
  EXPECT_THROW(nvrtc_supports("gfx90a"), invalid_input);
}

}  // namespace
}  // namespace attn
