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
  // IEEE half, round to nearest even, in integer arithmetic (_Float16 is not on every host
  // compiler: clang 14 on x86-64 refuses it).
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u;    // NaN
  if (u >= 0x477ff000u) return sign | 0x7c00u;   // from 65520 on: infinity
  if (u < 0x38800000u) {                         // below 2^-14: subnormal, in units of 2^-24
    float f;
    std::memcpy(&f, &u, 4);
    f += 0.5f;  // 0.5's ulp is 2^-24: the addition rounds f to a multiple of it, to nearest even
    uint32_t r;
    std::memcpy(&r, &f, 4);
    return sign | static_cast<uint16_t>(r - 0x3f000000u);
  }
  u += 0xc8000fffu + ((u >> 13) & 1u);  // exponent 127 -> 15 bias, and round to nearest even
  return sign | static_cast<uint16_t>(u >> 13);
}

inline float from_bits(uint16_t b, bool bf16) {
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const uint32_t sign = static_cast<uint32_t>(b & 0x8000u) << 16, exponent = (b >> 10) & 0x1fu;
  const uint32_t mantissa = b & 0x3ffu;
  if (exponent == 0)  // subnormal or zero: mantissa x 2^-24
    return std::ldexp(static_cast<float>(mantissa), -24) * (sign ? -1.f : 1.f);
  const uint32_t u = sign | (mantissa << 13) | (exponent == 31 ? 0x7f800000u : (exponent + 112) << 23);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float round_to(float x, bool bf16) { return from_bits(to_bits(x, bf16), bf16); }

/// Element offset of (b, h, i, 0) of a contiguous tensor in the problem's layout, with rows of d
/// elements (0: the head dim; V's and O's are head_dim_v when it is set).
inline int64_t offset(const attn_tune_problem& p, bool kv, int64_t b, int64_t h, int64_t i, int64_t d = 0) {
  const int64_t heads = kv ? p.kv_heads : p.heads, n = kv ? p.kv_len : p.q_len;
  if (d == 0) d = p.head_dim;
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
  const int64_t DV = p.head_dim_v ? p.head_dim_v : D;  // V's and O's head dim
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  double error = 0, naive_error = 0;
  std::vector<double> s(M), s_naive(M);
  for (int64_t bh = 0; bh < p.batch * H; bh += every) {
    const int64_t b = bh / H, h = bh % H, kh = h / group;
    for (int64_t i = 0; i < N; i += row_every) {
      const int64_t last = std::min(p.causal ? i + M - N : M - 1, M - 1);
      if (last < 0) {
        for (int64_t c = 0; c < DV; ++c) {
          const float got = from_bits(out[offset(p, false, b, h, i, DV) + c], bf16);
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
      for (int64_t c = 0; c < DV; ++c) {
        double o = 0, o_naive = 0;
        for (int64_t j = 0; j <= last; ++j) {
          const float vj = v[offset(p, true, b, kh, j, DV) + c];
          o += s[j] / sum * vj;
          o_naive += round_to(static_cast<float>(s_naive[j] / sum_naive), bf16) * vj;
        }
        const float got = from_bits(out[offset(p, false, b, h, i, DV) + c], bf16);
        error = std::max(error, std::isnan(got) ? INFINITY : std::abs(got - o));
        naive_error = std::max(naive_error, std::abs(round_to(static_cast<float>(o_naive), bf16) - o));
      }
    }
  }
  return {error, 2 * naive_error + 1e-4};
}

}  // namespace example
