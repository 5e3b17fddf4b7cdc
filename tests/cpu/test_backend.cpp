// Which backend a command runs on (--backend, --family, --arch, an AMD GPU or not), the family each
// backend runs by default, and the runtimes this build has, without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/hiprtc.hpp"
#include "backend/runtime.hpp"
#include "cli/options.hpp"
#include "codegen/family.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"

namespace attn {
namespace {

// Whether f throws invalid_input with `text` in its message.
template <class F>
bool says(F&& f, const std::string& text) {
  return testing::invalid_input_message(f).find(text) != std::string::npos;
}

// A probe that fails the test if asked: the choice must not look for a device.
bool must_not_ask() {
  ADD_FAILURE() << "asked for an AMD GPU where the choice does not depend on one";
  return false;
}

TEST(choose_backend, auto_runs_on_an_amd_gpu_when_one_is_present) {
  EXPECT_EQ(choose_backend("auto", "", "", true, [] { return true; }), backend::hip);
  EXPECT_EQ(choose_backend("auto", "", "", true, [] { return false; }), backend::cuda);
}

TEST(choose_backend, auto_without_a_device_run_never_looks) {
  // --compile-only, export and merge: CUDA unless told otherwise, whatever GPU is there.
  EXPECT_EQ(choose_backend("auto", "", "", false, must_not_ask), backend::cuda);
}

TEST(choose_backend, family_and_arch_decide_before_the_device) {
  EXPECT_EQ(choose_backend("auto", "fa2", "", true, must_not_ask), backend::cuda);
  EXPECT_EQ(choose_backend("auto", "mfma", "", true, must_not_ask), backend::hip);
  EXPECT_EQ(choose_backend("auto", "", "gfx90a", true, must_not_ask), backend::hip);
  EXPECT_EQ(choose_backend("auto", "", "sm_80", true, must_not_ask), backend::cuda);
  EXPECT_EQ(choose_backend("hip", "", "", true, must_not_ask), backend::hip);
  EXPECT_EQ(choose_backend("cuda", "", "", true, must_not_ask), backend::cuda);
  EXPECT_EQ(choose_backend("hip", "mfma", "", true, must_not_ask), backend::hip);
}

TEST(choose_backend, bad_values_are_named) {
  EXPECT_TRUE(says([] { choose_backend("rocm", "", "", true, must_not_ask); }, "--backend 'rocm'"));
  EXPECT_TRUE(says([] { choose_backend("cuda", "mfma", "", true, must_not_ask); },
                   "--family mfma runs on the hip backend, not --backend cuda"));
  EXPECT_TRUE(says([] { choose_backend("hip", "fa2", "", true, must_not_ask); },
                   "--family fa2 runs on the cuda backend, not --backend hip"));
  EXPECT_TRUE(says([] { choose_backend("auto", "fa3", "", true, must_not_ask); }, "'fa3'"));
}

TEST(default_family, fa2_on_cuda_mfma_on_hip) {
  EXPECT_EQ(default_family(backend::cuda).name, "fa2");
  EXPECT_EQ(default_family(backend::hip).name, "mfma");
  EXPECT_EQ(default_family(backend::hip).backend, backend::hip);
}

using testing::parsed;

TEST(families, a_cuda_run_covers_fa2_wgmma_and_hopper_each_with_its_own_space) {
  const options o = parsed({"--compile-only", "--shape", "1,2,64,64"});
  EXPECT_EQ(o.families, (std::vector<std::string>{"fa2", "wgmma", "hopper"}));
  EXPECT_EQ(o.family, "fa2,wgmma,hopper");
  ASSERT_EQ(o.spaces.size(), 3u);
  EXPECT_EQ(o.spaces[0].enumerate(), fa2_family().default_space.enumerate());
  EXPECT_EQ(o.spaces[1].enumerate(), wgmma_family().default_space.enumerate());
  EXPECT_EQ(o.spaces[2].enumerate(), hopper_family().default_space.enumerate());
  EXPECT_EQ(families_of(backend::hip).front()->name, "mfma");
}

TEST(families, space_applies_to_each_family_and_a_list_is_kept_in_order) {
  const options o = parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "wgmma,fa2", "--space", "stages=2"});
  EXPECT_EQ(o.families, (std::vector<std::string>{"wgmma", "fa2"}));
  EXPECT_EQ(o.spaces[0].block_m, wgmma_family().default_space.block_m);
  EXPECT_EQ(o.spaces[1].block_m, fa2_family().default_space.block_m);
  EXPECT_EQ(o.spaces[0].stages, std::vector<int>{2});
  EXPECT_EQ(o.spaces[1].stages, std::vector<int>{2});
}

TEST(families, a_familys_own_axis_goes_to_the_families_that_have_it) {
  // On the default families (an H200 run, before hopper supersedes the others): hopper's schedule.
  const options o = parsed({"--compile-only", "--shape", "1,2,64,64", "--space", "schedule=3,7", "stages=2"});
  ASSERT_EQ(o.spaces.size(), 3u);
  EXPECT_EQ(o.spaces[2].knob, (std::vector<int>{3, 7}));
  EXPECT_EQ(o.spaces[2].stages, std::vector<int>{2});
  EXPECT_EQ(o.spaces[0].knob, fa2_family().default_space.knob);  // fa2's loaders left alone
  EXPECT_EQ(o.spaces[0].stages, std::vector<int>{2});
  const options both = parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "fa2,hopper", "--space",
                               "loader=1", "schedule=5"});
  EXPECT_EQ(both.spaces[0].knob, std::vector<int>{1});
  EXPECT_EQ(both.spaces[1].knob, std::vector<int>{5});
  // An axis no family of the run has is still named.
  EXPECT_TRUE(says([] { parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "fa2", "--space", "schedule=3"}); },
                   "unknown axis 'schedule'"));
}

TEST(families, bad_lists_are_named) {
  EXPECT_TRUE(says([] { parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "fa2,fa2"}); }, "fa2 is named twice"));
  EXPECT_TRUE(says([] { parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "fa2,fa9"}); }, "'fa9'"));
  EXPECT_TRUE(says([] { parsed({"--compile-only", "--shape", "1,2,64,64", "--family", "fa2,mfma"}); },
                   "--family mfma runs on the hip backend"));
  EXPECT_TRUE(says([] { parsed({"--shape", "1,2,64,64", "--configs", "m64_n64_w4_s2"}); },
                   "--configs needs exactly one --family"));
}

TEST(runtimes, this_build_has_cuda_and_hip_as_configured) {
  EXPECT_EQ(cuda_runtime().kind(), backend::cuda);
  if (!hip_available()) {
    EXPECT_EQ(hip_runtime(), nullptr);
    EXPECT_TRUE(says([] { runtime_for(backend::hip); }, "built without HIP"));
    EXPECT_EQ(detect_backend(), backend::cuda);
    return;
  }
  ASSERT_NE(hip_runtime(), nullptr);
  EXPECT_EQ(runtime_for(backend::hip).kind(), backend::hip);
}

TEST(runtimes, no_amd_gpu_is_reported_as_zero_devices_with_a_reason) {
  if (!hip_available()) GTEST_SKIP() << "built without HIP";
  if (std::filesystem::exists("/dev/kfd")) GTEST_SKIP() << "this machine has the ROCm driver (/dev/kfd)";
  std::string why;
  EXPECT_EQ(hip_runtime()->device_count(&why), 0);
  EXPECT_NE(why.find("hipErrorNoDevice"), std::string::npos) << why;
  EXPECT_EQ(detect_backend(), backend::cuda);
}

}  // namespace
}  // namespace attn
