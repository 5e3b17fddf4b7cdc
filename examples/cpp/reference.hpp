// Host-side helpers of the example (and of the library's GPU tests): bf16/fp16 bits, and a
// reference attention in float64 beside the same math done naively in the input precision,
// for FlashAttention's acceptance rule (max error <= 2 x the naive error + 1e-4).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attn_tune/attn_tune.h"

namespace example {

inline uint16_t to_bits(float x, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
    return static_cast<uint16_t>(u >> 16);
  }
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

inline float from_bits(uint16_t b, bool bf16) {
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

inline float round_to(float x, bool bf16) { return from_bits(to_bits(x, bf16), bf16); }

/// Element offset of (b, h, i, 0) of a contiguous tensor in the problem's layout.
inline int64_t offset(const attn_tune_problem& p, bool kv, int64_t b, int64_t h, int64_t i) {
  const int64_t heads = kv ? p.kv_heads : p.heads, n = kv ? p.kv_len : p.q_len, d = p.head_dim;
  return p.layout == ATTN_TUNE_BSHD ? ((b * n + i) * heads + h) * d : ((b * heads + h) * n + i) * d;
}

struct comparison {
  double error = 0;    ///< max |O - O_fp64|
  double allowed = 0;  ///< 2 x max |O_naive - O_fp64| + 1e-4
};

/// Compares `out` (the kernel's O, as bits) with float64 attention of q, k, v (rounded floats),
/// for the (batch, head) pairs whose index is a multiple of `every` and the query rows whose index
/// is a multiple of `row_every` (1: all). A row that sees no key (causal, N_q > N_kv) must be 0.
inline comparison compare(const attn_tune_problem& p, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<uint16_t>& out, int every = 1,
                          int row_every = 1) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  const int64_t H = p.heads, N = p.q_len, M = p.kv_len, D = p.head_dim, group = p.heads / p.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  double error = 0, naive_error = 0;
  std::vector<double> s(M), s_naive(M);
  for (int64_t bh = 0; bh < p.batch * H; bh += every) {
    const int64_t b = bh / H, h = bh % H, kh = h / group;
    for (int64_t i = 0; i < N; i += row_every) {
      const int64_t last = std::min(p.causal ? i + M - N : M - 1, M - 1);
      if (last < 0) {
        for (int64_t c = 0; c < D; ++c) {
          const float got = from_bits(out[offset(p, false, b, h, i) + c], bf16);
          error = std::max(error, std::isnan(got) ? INFINITY : std::abs(static_cast<double>(got)));
        }
        continue;
      }
      const float* qr = &q[offset(p, false, b, h, i)];
      double mx = -INFINITY, mx_naive = -INFINITY;
      for (int64_t j = 0; j <= last; ++j) {
        const float* kr = &k[offset(p, true, b, kh, j)];
        double dot = 0;
        float dot_naive = 0;
        for (int64_t c = 0; c < D; ++c) {
          dot += static_cast<double>(qr[c]) * kr[c];
          dot_naive += round_to(static_cast<float>(qr[c] * scale), bf16) * kr[c];
        }
        s[j] = dot * scale, s_naive[j] = round_to(dot_naive, bf16);
        mx = std::max(mx, s[j]), mx_naive = std::max(mx_naive, s_naive[j]);
      }
      double sum = 0, sum_naive = 0;
      for (int64_t j = 0; j <= last; ++j) {
        s[j] = std::exp(s[j] - mx), sum += s[j];
        s_naive[j] = std::exp(s_naive[j] - mx_naive), sum_naive += s_naive[j];
      }
      for (int64_t c = 0; c < D; ++c) {
        double o = 0, o_naive = 0;
        for (int64_t j = 0; j <= last; ++j) {
          const float vj = v[offset(p, true, b, kh, j) + c];
          o += s[j] / sum * vj;
          o_naive += round_to(static_cast<float>(s_naive[j] / sum_naive), bf16) * vj;
        }
        const float got = from_bits(out[offset(p, false, b, h, i) + c], bf16);
        error = std::max(error, std::isnan(got) ? INFINITY : std::abs(got - o));
        naive_error = std::max(naive_error, std::abs(round_to(static_cast<float>(o_naive), bf16) - o));
      }
    }
  }
  return {error, 2 * naive_error + 1e-4};
}

}  // namespace example
