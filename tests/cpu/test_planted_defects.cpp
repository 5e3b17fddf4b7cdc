// Every planted defect (tests/planted_defects.hpp) applies to today's kernels and still
// compiles, so the GPU test that requires each to come out `wrong` tests the verifier, not a
// stale anchor.
#include <gtest/gtest.h>

#include "../planted_defects.hpp"
#include "parsed_options.hpp"
#include "codegen/cache.hpp"
#include "codegen/family.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

TEST(planted_defects, each_applies_and_compiles) {
  temp_dir d;
  for (const auto& defect : testing::planted_defects()) {
    SCOPED_TRACE(defect.name);
    const auto dir = testing::plant(defect, d.path());
    ASSERT_FALSE(dir.empty()) << "anchor not found once in kernels/" << defect.file << ": move the defect";
    const compile_cache cache("", kernel_sources::from_directory(dir.string()));
    std::vector<std::string> args = {"--shape", defect.shape};
    if (defect.causal) args.push_back("--causal");
    args.insert(args.end(), defect.options.begin(), defect.options.end());
    const problem s = testing::parsed(args).problem;
    tune_options t;
    t.family = defect.family;
    const bool hopper = t.family == "hopper";
    t.configs = {hopper ? tile_config{128, 64, 12, 2, 7 | defect.schedule_bits} : tile_config{64, 64, 4, 2}};
    const tune_result r = compile_only(s, hopper ? "sm_90a" : "sm_80", cache, t);
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].status, status::compiled) << r.records[0].message;
  }
}

}  // namespace
}  // namespace attn
