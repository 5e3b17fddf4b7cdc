// NVRTC compiles every default-space fa2 variant (and the support module) for sm_80 and sm_90a,
// and every default-space wgmma variant for sm_90a, without a GPU, and records each one's
// resource report.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "codegen/nvrtc.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {
namespace {

struct compile_case {
  const char* family;
  const char* arch;
  int head_dim;
  bool causal;
};

class compile_default_space : public ::testing::TestWithParam<compile_case> {};

TEST_P(compile_default_space, every_variant_compiles) {
  const auto [family, arch, d, causal] = GetParam();
  problem s;
  s.batch = 2, s.heads = 4, s.kv_heads = 4, s.q_len = s.kv_len = 1024, s.head_dim = d;
  s.causal = causal;
  // A fresh, empty cache: everything is really compiled.
  const temp_dir dir("attn-tune-compile-test");  // unique: two ctest runs on one machine never share it
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = family;
  t.space = find_family(family).default_space;
  // The prefill tiles only: this small grid would add split counts (tests/cpu/test_decode.cpp
  // compiles the decode spaces).
  if (t.space.decode_axes) t.space.splits = {1}, t.space.pack_gqa = {0};
  const tune_result r = compile_only(s, arch, cache, t);
  ASSERT_EQ(r.records.size(), t.space.enumerate().size());
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
    // The hopper family's pruner keeps only what ptxas fits in the consumers' registers.
    if (std::string(family) == "hopper") EXPECT_EQ(rec.spill_bytes, 0) << name(rec.config) << " spills";
    ++compiled;
  }
  // Exact counts for fa2 and wgmma (test_pruning_pinned.cpp pins the same numbers from the model).
  const std::map<std::string, int> exact = {{"fa2 sm_80 64", 51},  {"fa2 sm_80 128", 31},  {"fa2 sm_90a 64", 52},
                                            {"fa2 sm_90a 128", 37}, {"wgmma sm_90a 64", 42}, {"wgmma sm_90a 128", 31}};
  const auto it = exact.find(fmt::format("{} {} {}", family, arch, d));
  if (it != exact.end()) EXPECT_EQ(compiled, it->second) << r.pruning;
  else EXPECT_GE(compiled, 4) << r.pruning;
  // A second run of the same space compiles nothing.
  const tune_result again = compile_only(s, arch, cache, t);
  EXPECT_EQ(again.cached, compiled);
}

INSTANTIATE_TEST_SUITE_P(
    archs, compile_default_space,
    ::testing::Values(compile_case{"fa2", "sm_80", 64, false}, compile_case{"fa2", "sm_80", 128, true},
                      compile_case{"fa2", "sm_80", 72, false}, compile_case{"fa2", "sm_90a", 40, true},
                      compile_case{"fa2", "sm_90a", 59, true},
                      compile_case{"fa2", "sm_90a", 64, true}, compile_case{"fa2", "sm_90a", 128, false},
                      compile_case{"wgmma", "sm_90a", 64, true}, compile_case{"wgmma", "sm_90a", 128, false},
                      compile_case{"hopper", "sm_90a", 64, false}, compile_case{"hopper", "sm_90a", 64, true},
                      compile_case{"hopper", "sm_90a", 128, false}, compile_case{"hopper", "sm_90a", 128, true},
                      compile_case{"hopper", "sm_90a", 256, false}, compile_case{"hopper", "sm_90a", 256, true},
                      compile_case{"hopper", "sm_90a", 40, true}, compile_case{"hopper", "sm_90a", 72, false},
                      compile_case{"hopper", "sm_90a", 120, true},
                      // issue 23's head dims: 40, 72 (above), 80, 96 and 192, both families
                      compile_case{"hopper", "sm_90a", 80, true}, compile_case{"hopper", "sm_90a", 96, false},
                      compile_case{"hopper", "sm_90a", 192, true}, compile_case{"fa2", "sm_80", 40, true},
                      compile_case{"fa2", "sm_80", 80, false}, compile_case{"fa2", "sm_80", 96, true},
                      compile_case{"fa2", "sm_80", 192, false}),
    [](const ::testing::TestParamInfo<compile_case>& info) {
      return std::string(info.param.family) + "_" + info.param.arch + "_d" + std::to_string(info.param.head_dim) +
             (info.param.causal ? "_causal" : "");
    });

TEST(wgmma_family, is_pruned_off_hopper_and_runs_only_on_cc_9_0) {
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 256, s.head_dim = 128;
  tune_options t;
  t.family = "wgmma";
  t.space = wgmma_family().default_space;
  const compile_cache no_cache("");
  // Nothing of the space can run on sm_80: the run is refused, saying why for every config.
  std::string message;
  try {
    compile_only(s, "sm_80", no_cache, t);
  } catch (const invalid_input& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("72 x wgmma needs sm_Na (Hopper)"), std::string::npos) << message;
  EXPECT_TRUE(runs_on(wgmma_family(), 9, 0));
  EXPECT_FALSE(runs_on(wgmma_family(), 8, 0));
  EXPECT_FALSE(runs_on(wgmma_family(), 10, 0));  // sm_90a code does not run on Blackwell
  EXPECT_TRUE(runs_on(fa2_family(), 10, 0));
  EXPECT_FALSE(runs_on(fa2_family(), 7, 5));
}

TEST(wgmma_family, rejects_what_it_cannot_express) {
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 256, s.head_dim = 256;
  resource_limits hopper;
  const auto& f = wgmma_family();
  auto why = [&](int bm, int bn, int w, int st) { return f.reject_reason(tile_config{bm, bn, w, st}, s, hopper); };
  EXPECT_TRUE(why(96, 64, 6, 2).has_value());        // not 64 rows per warpgroup
  EXPECT_TRUE(why(128, 64, 16, 2).has_value());      // two warpgroups too many
  EXPECT_TRUE(why(128, 64, 12, 1).has_value());      // producer needs a ring of >= 2
  EXPECT_TRUE(why(192, 64, 16, 2).has_value());      // D=256 O alone exceeds the consumers' 152 registers
  EXPECT_FALSE(why(128, 64, 12, 2).has_value()) << *why(128, 64, 12, 2);  // producer + 2 consumers
  EXPECT_FALSE(why(128, 64, 8, 2).has_value()) << *why(128, 64, 8, 2);
  // Four consumers and a producer (640 threads) hold 96 registers each from launch: the consumers
  // get (640 * 96 - 128 * 40) / 512 = 110, so 104, not a share of the whole 64K file (112), which
  // setmaxnreg would wait for forever.
  const auto four = why(256, 64, 20, 2);
  ASSERT_TRUE(four.has_value());
  EXPECT_NE(four->find("over the 104 a computing thread gets"), std::string::npos) << *four;
  // Q, two stages of K and V, four mbarriers per stage, 1024 bytes to align the swizzled tiles.
  EXPECT_EQ(f.shared_memory_bytes(tile_config{128, 64, 12, 2}, s), (128 + 2 * 2 * 64) * 256 * 2 + 2 * 32 + 1024);
}

TEST(compile_support_module, both_dtypes_both_archs) {
  const compile_cache no_cache("");
  for (const char* arch : {"sm_80", "sm_90a"})
    for (dtype t : {dtype::bf16, dtype::fp16}) {
      const auto r = compile_cubin(support_source(), arch, support_options(t), no_cache.kernels());
      EXPECT_TRUE(r.ok) << arch << " " << to_string(t) << ": " << r.log;
      // Every kernel load_support asks for is in it (the backward's reference too), by its C name.
      for (const auto& [symbol, member] : support_kernel_table())
        EXPECT_NE(r.cubin.find(std::string(symbol) + '\0'), std::string::npos) << arch << " lacks " << symbol;
    }
}

// The cubin records registers and the stack frame itself: what attn-tune falls back on when
// NVRTC's log has no ptxas report (the driver's compute cache answered the compile).
TEST(cubin_resources, match_ptxas_report) {
  const compile_cache no_cache("");
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 512, s.head_dim = 64, s.causal = true;
  struct one {
    std::string source, arch;
    std::vector<std::string> options;
  };
  std::vector<one> programs;
  for (const auto& [family, arch, config] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"fa2", "sm_80", "m128_n64_w4_s2"}, {"wgmma", "sm_90a", "m128_n64_w12_s2"},
           {"hopper", "sm_90a", "m128_n128_w12_s2_k6"}}) {
    const auto& f = find_family(family);
    programs.push_back({f.instantiation(parse_config_name(config), s), arch, f.compile_options});
  }
  // Dynamic indexing of a local array: a stack frame.
  programs.push_back({"extern \"C\" __global__ void k(float* x, int n) {\n"
                      "  float a[64];\n  for (int i = 0; i < 64; ++i) a[(i * n) & 63] = x[i];\n"
                      "  x[threadIdx.x] = a[n & 63] + a[(n * 3) & 63];\n}\n",
                      "sm_90a", {}});
  for (const auto& p : programs) {
    const auto r = compile_cubin(p.source, p.arch, p.options, no_cache.kernels());
    ASSERT_TRUE(r.ok) << r.log;
    const auto from_log = parse_ptxas_report(r.log), from_cubin = cubin_resources(r.cubin);
    ASSERT_GT(from_log.registers, 0) << r.log;
    EXPECT_EQ(from_cubin.registers, from_log.registers) << r.log;
    EXPECT_EQ(from_cubin.stack_bytes, from_log.stack_bytes) << r.log;
    EXPECT_EQ(from_cubin.spill_bytes, 0);
    EXPECT_EQ(cuda_resources("", r.cubin).registers, from_log.registers);  // a log without the report
    EXPECT_EQ(cuda_resources(r.log, "").registers, from_log.registers);
  }
  EXPECT_GT(cubin_resources(compile_cubin(programs.back().source, "sm_90a", {}, no_cache.kernels()).cubin).stack_bytes, 0);
}

TEST(cubin_resources, anything_else_reads_as_zero_without_reading_past_the_end) {
  const compile_cache no_cache("");
  const auto r = compile_cubin(support_source(), "sm_90a", support_options(dtype::bf16), no_cache.kernels());
  ASSERT_TRUE(r.ok) << r.log;
  for (const std::string& junk : {std::string(), std::string("\x7f" "ELF"), std::string(4000, '\x7f'),
                                  std::string("not an ELF image at all, but long enough to have a header........")})
    EXPECT_EQ(cubin_resources(junk).registers, 0);
  // Every cut of a real cubin, and single flipped bytes: never a crash (the sanitizer build runs
  // this too), never more registers than a thread can have.
  for (size_t n = 0; n < r.cubin.size(); n += 7) EXPECT_LE(cubin_resources(r.cubin.substr(0, n)).registers, 255);
  std::string flipped = r.cubin;
  for (size_t i = 0; i < flipped.size(); i += 13) {
    flipped[i] = static_cast<char>(~flipped[i]);
    (void)cubin_resources(flipped);
    flipped[i] = r.cubin[i];
  }
}

TEST(compile_cache, an_entry_whose_log_lacks_the_report_is_used_with_the_cubins_numbers) {
  const temp_dir dir("attn-tune-cache-no-report");
  const compile_cache cache(dir.path().string());
  const std::string source = support_source();
  const auto options = support_options(dtype::bf16);
  auto compiled = compile_cubin(source, "sm_90a", options, cache.kernels());
  ASSERT_TRUE(compiled.ok);
  const int registers = cubin_resources(compiled.cubin).registers;  // the largest of its kernels
  ASSERT_GT(registers, 0);
  compiled.log = "(the driver's compute cache answered: no ptxas report)";
  cache.store(cache.key(source, "sm_90a", options, backend::cuda), compiled);
  const char* before = std::getenv("CUDA_CACHE_DISABLE");
  const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  // The driver's cache on (as a library in a user's process may have it): the cubin's numbers serve.
  setenv("CUDA_CACHE_DISABLE", "0", 1);
  ::testing::internal::CaptureStderr();
  const auto hit = compile_with_cache(cache, source, "sm_90a", options, backend::cuda);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(hit.cached);
  EXPECT_EQ(hit.result.registers, registers);
  // Off (attn-tune's default): compiled again, once said, and the report is back in the entry.
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  ::testing::internal::CaptureStderr();
  const auto again = compile_with_cache(cache, source, "sm_90a", options, backend::cuda);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(again.cached);
  EXPECT_NE(said.find("cache entries without ptxas's report"), std::string::npos) << said;
  EXPECT_GT(parse_ptxas_report(again.result.log).registers, 0);
  const auto third = compile_with_cache(cache, source, "sm_90a", options, backend::cuda);
  EXPECT_TRUE(third.cached);
  if (saved) setenv("CUDA_CACHE_DISABLE", saved->c_str(), 1);
  else unsetenv("CUDA_CACHE_DISABLE");
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

TEST(ptxas_report, of_several_kernels_the_largest_as_the_cubin_reader) {
  const auto r = parse_ptxas_report(
      "ptxas info    : Used 40 registers, used 0 barriers\nptxas         .     16 bytes stack frame\n"
      "ptxas info    : Used 72 registers, used 1 barriers\nptxas         .     8 bytes stack frame\n");
  EXPECT_EQ(r.registers, 72);
  EXPECT_EQ(r.stack_bytes, 16);
}

TEST(ptxas_report, keeps_the_performance_warning) {
  const std::string log =
      "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
      "insufficient register resources for the function 'attn_wgmma'\nptxas info    : Used 168 registers\n";
  EXPECT_EQ(ptxas_performance_warning(log),
            "ptxas: wgmma.mma_async instructions are serialized due to insufficient register resources");
  EXPECT_EQ(ptxas_performance_warning("ptxas info    : Used 58 registers\n"), "");
}

TEST(nvrtc, knows_the_architectures_ci_uses) {
  EXPECT_TRUE(nvrtc_supports("sm_80"));
  EXPECT_TRUE(nvrtc_supports("sm_90a"));
  EXPECT_THROW(nvrtc_supports("gfx90a"), invalid_input);
}

}  // namespace
}  // namespace attn
