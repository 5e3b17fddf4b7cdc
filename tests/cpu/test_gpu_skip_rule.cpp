// GPU tests skip only where there is no GPU (issue 11, item 15): a machine with device nodes but
// no working device fails them, and ATTN_TUNE_REQUIRE_GPU=1 makes a skip a failure.
#include <gtest/gtest.h>

#include "../gpu/gpu_fixture.hpp"

namespace attn::testing {
namespace {

TEST(gpu_skip_rule, only_no_device_skips) {
  EXPECT_EQ(decide_gpu_test(1, true, false), gpu_decision::run);
  EXPECT_EQ(decide_gpu_test(2, false, true), gpu_decision::run);
  EXPECT_EQ(decide_gpu_test(0, false, false), gpu_decision::skip);  // this CI machine
  EXPECT_EQ(decide_gpu_test(0, true, false), gpu_decision::fail);   // a GPU host with a broken driver
  EXPECT_EQ(decide_gpu_test(0, false, true), gpu_decision::fail);   // ATTN_TUNE_REQUIRE_GPU=1
}

}  // namespace
}  // namespace attn::testing
