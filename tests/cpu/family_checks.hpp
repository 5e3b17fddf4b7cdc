#pragma once
// What the tests of fa2-only problems (a KV cache, a window, softcap, head dims of 8s) share: that
// fa2 takes the problem and every other family refuses it with the reason, and aligned fake
// device pointers for make_fwd_params (it checks them and never dereferences them).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "codegen/family.hpp"
#include "core/problem.hpp"

namespace attn::testing {

/// fa2 takes s; hopper, wgmma and mfma refuse it, each reason holding `reason`.
inline void expect_only_fa2_takes(const problem& s, const std::string& reason) {
  EXPECT_FALSE(problem_refusal(fa2_family(), s)) << describe(s);
  for (const kernel_family* f : {&hopper_family(), &wgmma_family(), &mfma_family()}) {
    const auto why = problem_refusal(*f, s);
    ASSERT_TRUE(why) << f->name;
    EXPECT_NE(why->find(reason), std::string::npos) << *why;
  }
}

inline const void* fake(uintptr_t at) { return reinterpret_cast<const void*>(at); }

}  // namespace attn::testing
