#pragma once
// The backward kernels' planted defects (issue 22): each one text substitution in a copy of kernels/.
// The GPU test (tests/gpu/test_backward_gpu.cpp) checks that each comes out wrong; the CPU test
// (tests/cpu/test_backward_compile.cpp) that each anchor is still there, once, and that the planted
// source still compiles, so a refactor cannot quietly retire one.
#include <vector>

namespace attn::testing {

struct backward_defect {
  const char* name;
  const char* file;    ///< relative to kernels/
  const char* from;    ///< occurs once in the file
  const char* to;
  const char* config;  ///< the variant it is checked with (codegen/backward.hpp's name)
};

inline const std::vector<backward_defect>& backward_defects() {
  static const char* fa2 = "kv_m32_n64_w4_s2-q_m64_n64_w4_s2";
  static const char* wg = "wg_kv_m64_n64_w4_s2-q_m64_n64_w4_s2";
  static const char* atomic = "wg_kv_m64_n64_w4_s2-dq_atomic";
  static const std::vector<backward_defect> all = {
      {"dropped GQA reduction", "fa2_bwd.cuh", "count = per_head * p.group;", "count = per_head;", fa2},
      {"missing dO.O term", "fa2_bwd.cuh", "if (lane == 0) p.delta[row] = x;", "if (lane == 0) p.delta[row] = 0.f * x;", fa2},
      {"off-by-one causal mask (dK/dV)", "fa2_bwd.cuh", "hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset, key)",
       "hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset + 1, key)", fa2},
      {"off-by-one causal mask (dQ)", "fa2_bwd.cuh", "hidden<C::CAUSAL, C::WINDOW>(p, i + offset, n)",
       "hidden<C::CAUSAL, C::WINDOW>(p, i + offset + 1, n)", fa2},
      {"wgmma: off-by-one causal mask (dK/dV)", "wgmma_bwd.cuh", "hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset, key)",
       "hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset + 1, key)", wg},
      {"wgmma: off-by-one causal mask (dQ)", "wgmma_bwd.cuh", "hidden<C::CAUSAL, C::WINDOW>(p, i0 + 8 * h + offset, n)",
       "hidden<C::CAUSAL, C::WINDOW>(p, i0 + 8 * h + offset + 1, n)", wg},
      {"wgmma: dS^T without delta", "wgmma_bwd.cuh", "(x[i] - delta[8 * (i / 4) + 2 * t + i % 2])",
       "(x[i] - 0.f * delta[8 * (i / 4) + 2 * t + i % 2])", wg},
      {"atomic dQ: the sum not zeroed", "fa2_bwd.cuh", "if constexpr (ZERO_DQ)", "if constexpr (false && ZERO_DQ)",
       atomic},
      {"atomic dQ: the odd lanes' rows dropped", "wgmma_bwd.cuh", "if (row >= p.q_len) continue;",
       "if (row >= p.q_len || odd) continue;", atomic},
      {"atomic dQ: the scale left out of even columns", "wgmma_bwd.cuh", "pack2<BF16>(x.x * p.softmax_scale,",
       "pack2<BF16>(x.x,", atomic},
  };
  return all;
}

}  // namespace attn::testing
