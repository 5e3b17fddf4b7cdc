// Issue 20, item 4 (the host side): the scale a caller gives is the one the kernels get, in both
// of its forms, and 0 means 1/sqrt(D); K's and V's strides go to the kernels as given.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/kernel_args.hpp"

namespace attn {
namespace {

forward_tensors fake_tensors() {
  return {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000), reinterpret_cast<void*>(0x3000),
          reinterpret_cast<void*>(0x4000), reinterpret_cast<float*>(0x5000)};
}

TEST(ForwardArgsScale, AGivenScaleReachesTheKernelsInBothForms) {
  problem s;
  s.heads = s.kv_heads = 2;
  s.q_len = s.kv_len = 128;
  s.head_dim = 128;
  const auto p = make_fwd_params(s, fake_tensors(), {}, {}, 0.37f);
  EXPECT_FLOAT_EQ(p.softmax_scale, 0.37f);
  EXPECT_NEAR(p.scale_log2, 0.37 * M_LOG2E, 1e-6);
  const auto d = make_fwd_params(s, fake_tensors(), {}, {}, 0);
  EXPECT_FLOAT_EQ(d.softmax_scale, static_cast<float>(1 / std::sqrt(128.0)));
  EXPECT_NEAR(d.scale_log2, M_LOG2E / std::sqrt(128.0), 1e-6);
  for (float bad : {-0.5f, INFINITY, NAN}) EXPECT_THROW(make_fwd_params(s, fake_tensors(), {}, {}, bad), invalid_input);
}

TEST(ForwardArgsScale, KvStridesReachTheKernelsAsGiven) {
  problem s;
  s.batch = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.q_len = 64;
  s.kv_len = 96;
  s.head_dim = 64;
  const tensor_strides kv{2 * 96 * 80, 96 * 80, 80};  // rows padded to 80 elements
  const auto p = make_fwd_params(s, fake_tensors(), {}, kv, 0);
  EXPECT_EQ(p.kv_batch_stride, 2 * 96 * 80);
  EXPECT_EQ(p.kv_head_stride, 96 * 80);
  EXPECT_EQ(p.kv_row_stride, 80);
  EXPECT_EQ(p.q_row_stride, 64);  // Q's stay contiguous
  EXPECT_EQ(p.q_head_stride, 64 * 64);
  EXPECT_EQ(p.kv_len, 96);
  EXPECT_EQ(p.group, 2);
}

}  // namespace
}  // namespace attn
