// With the default families on a Hopper GPU, hopper supersedes fa2 and wgmma; but when none of its
// variants passes (here: every one fails to compile, a defect planted in hopper.cuh), the others
// that take the problem are searched too, so the problem still gets a correct kernel, and the run
// says so. A superseding family that passes keeps the run to itself, and configs named with
// --configs (the superseding family's) are not tried on the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cache.hpp"
#include "codegen/family.hpp"
#include "codegen/kernel_sources.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "run/orchestrator.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

kernel_sources with_planted_error(const std::string& file) {
  auto files = kernel_sources::embedded().files();
  for (auto& f : files)
    if (f.name == file) f.text = "#error planted defect\n" + f.text;
  return kernel_sources::from_files(files, "test");
}

// The three CUDA families with one or two configs each, defaulted (as a run without --family).
family_run small_run() {
  family_run run;
  run.families = {"fa2", "wgmma", "hopper"};
  run.spaces = {parse_space({"block_m=64", "block_n=64", "warps=4", "stages=2"}, fa2_family().default_space),
                parse_space({"block_m=64", "block_n=64", "warps=4", "stages=2"}, wgmma_family().default_space),
                parse_space({"block_m=128", "block_n=128", "warps=12", "stages=2", "schedule=3,7"},
                            hopper_family().default_space)};
  run.families_defaulted = true;
  return run;
}

problem shape() {
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 256, s.head_dim = 128, s.causal = true;
  validate(s);
  return s;
}

std::vector<std::string> families_of(const tune_result& r, status st) {
  std::vector<std::string> out;
  for (const record& x : r.records)
    if (x.status == st && std::find(out.begin(), out.end(), x.family) == out.end()) out.push_back(x.family);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FamilyFallback, WhenNoVariantOfTheSupersedingFamilyPassesTheOthersAreSearched) {
  const temp_dir dir("attn-tune-fallback");
  const compile_cache cache(dir.path().string(), with_planted_error("hopper.cuh"));
  tune_options t;
  std::vector<std::string> said;
  t.progress = [&](const std::string& line) { said.push_back(line); };
  const tune_result r = compile_families(small_run(), "sm_90a", shape(), cache, t);
  EXPECT_EQ(families_of(r, status::compile_error), std::vector<std::string>{"hopper"});
  EXPECT_EQ(families_of(r, status::compiled), (std::vector<std::string>{"fa2", "wgmma"}));
  const bool told = std::any_of(said.begin(), said.end(), [](const std::string& line) {
    return line.find("no variant of hopper passed on") != std::string::npos &&
           line.find("searching fa2,wgmma too") != std::string::npos;
  });
  EXPECT_TRUE(told) << (said.empty() ? std::string("nothing said") : said.back());
}

TEST(FamilyFallback, ASupersedingFamilyThatCompilesRunsAlone) {
  const temp_dir dir("attn-tune-fallback-ok");
  const compile_cache cache(dir.path().string());
  const tune_result r = compile_families(small_run(), "sm_90a", shape(), cache, tune_options{});
  EXPECT_EQ(families_of(r, status::compiled), std::vector<std::string>{"hopper"});
  EXPECT_TRUE(families_of(r, status::compile_error).empty());
}

// Configs named with --configs are the superseding family's: they are not tried on the others.
TEST(FamilyFallback, NamedConfigsAreNotTriedOnTheOthers) {
  const temp_dir dir("attn-tune-fallback-configs");
  const compile_cache cache(dir.path().string(), with_planted_error("hopper.cuh"));
  tune_options t;
  t.configs = {{128, 128, 12, 2, 7}};
  const tune_result r = compile_families(small_run(), "sm_90a", shape(), cache, t);
  ASSERT_FALSE(r.records.empty());
  for (const record& x : r.records) EXPECT_EQ(x.family, "hopper") << name(x.config) << ": " << x.message;
}

}  // namespace
}  // namespace attn
