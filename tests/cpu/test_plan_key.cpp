// The library's plan key (src/library/plan_key.hpp): every field of the problem, every byte of
// the kernel's parameter, the stream and the capture state change it, so no two calls that need
// different plans share one; the same call gives the same key.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "codegen/kernel_args.hpp"
#include "library/plan_key.hpp"
#include "varied_problem.hpp"

namespace attn {
namespace {

problem sample() {
  problem s;
  s.batch = 8, s.heads = 32, s.kv_heads = 8, s.q_len = 1, s.kv_len = 4096, s.head_dim = 128;
  return s;
}

attn_k::fwd_params sample_params(const problem& s) {
  alignas(16) static std::array<char, 64> memory;  // pointers only looked at, never read
  const forward_tensors t{memory.data(), memory.data() + 16, memory.data() + 32, memory.data() + 48,
                          reinterpret_cast<float*>(memory.data())};
  return make_fwd_params(s, t, {}, {}, 0);
}

TEST(plan_key, the_same_call_gives_the_same_key) {
  const problem s = sample();
  EXPECT_EQ(plan_key(s, sample_params(s), nullptr, false), plan_key(s, sample_params(s), nullptr, false));
}

TEST(plan_key, every_field_of_the_problem_changes_it) {
  const problem s = sample();
  const attn_k::fwd_params params = sample_params(s);
  const std::string base = plan_key(s, params, nullptr, false);
  for (const problem_field& f : problem_fields()) {
    const problem other = varied(f, s);
    ASSERT_NE(f.get(other), f.get(s)) << f.name << ": give varied() a second value of the field";
    EXPECT_NE(plan_key(other, params, nullptr, false), base) << f.name << " is not in the plan key";
  }
}

TEST(plan_key, every_field_of_the_problem_changes_its_bytes) {  // the backward's plans' key
  const problem s = sample();
  const std::string base = problem_bytes(s);
  EXPECT_EQ(problem_bytes(sample()), base);
  for (const problem_field& f : problem_fields()) {
    const problem other = varied(f, s);
    EXPECT_NE(problem_bytes(other), base) << f.name << " is not in problem_bytes";
  }
}

TEST(plan_key, every_byte_of_the_parameter_changes_it) {
  const problem s = sample();
  const attn_k::fwd_params params = sample_params(s);
  const std::string base = plan_key(s, params, nullptr, false);
  for (size_t i = 0; i < sizeof params; ++i) {
    attn_k::fwd_params other = params;
    reinterpret_cast<unsigned char*>(&other)[i] ^= 1;
    EXPECT_NE(plan_key(s, other, nullptr, false), base) << "byte " << i;
  }
}

TEST(plan_key, a_pointer_a_stride_and_the_scale_change_it) {
  const problem s = sample();
  const attn_k::fwd_params params = sample_params(s);
  const std::string base = plan_key(s, params, nullptr, false);
  attn_k::fwd_params moved = params, strided = params, scaled = params;
  moved.o = static_cast<char*>(moved.o) + 16;
  strided.kv_row_stride += 8;
  scaled.softmax_scale *= 2;
  EXPECT_NE(plan_key(s, moved, nullptr, false), base);
  EXPECT_NE(plan_key(s, strided, nullptr, false), base);
  EXPECT_NE(plan_key(s, scaled, nullptr, false), base);
}

TEST(plan_key, the_stream_and_the_capture_state_change_it) {
  const problem s = sample();
  const attn_k::fwd_params params = sample_params(s);
  int stream_a = 0, stream_b = 0;
  const std::string base = plan_key(s, params, &stream_a, false);
  EXPECT_NE(plan_key(s, params, &stream_b, false), base);
  EXPECT_NE(plan_key(s, params, nullptr, false), base);
  EXPECT_NE(plan_key(s, params, &stream_a, true), base);
}

}  // namespace
}  // namespace attn
