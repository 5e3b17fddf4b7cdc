// Host-side helpers of the example (and of the library's GPU tests): bf16/fp16 bits, tensor
// offsets (contiguous or a packed variable-length batch), attn-tune's FLOP count, and a reference
// attention in float64 beside the same math done naively in the input precision, for
// FlashAttention's acceptance rule (max error <= 2 x the naive error + 1e-4).
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

/// A packed variable-length batch on the host: cu_seqlens_q and cu_seqlens_k as the device gets
/// them ([0, L1, L1 + L2, ...], B + 1 each); both empty when the batch is not packed.
struct packed_batch {
  std::vector<int64_t> cu_q, cu_k;
};

/// [0, L1, L1 + L2, ...]: the rows where each sequence starts, and the total last.
inline std::vector<int64_t> cumulative(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> starts{0};
  for (int64_t n : lengths) starts.push_back(starts.back() + n);
  return starts;
}

/// Element offset of row i of sequence b, head h, in Q or O (kv false) or K or V, with rows of d
/// elements (0: the head dim; V's and O's are head_dim_v when it is set): contiguous in the
/// problem's layout, or, given that side's offsets `cu` (a packed batch), row cu[b] + i of
/// [total, heads, d] (BSHD, FlashAttention's varlen layout) or [heads, total, d] (BHSD).
inline int64_t offset(const attn_tune_problem& p, bool kv, int64_t b, int64_t h, int64_t i, int64_t d = 0,
                      const std::vector<int64_t>& cu = {}) {
  const int64_t heads = kv ? p.kv_heads : p.heads;
  if (d == 0) d = p.head_dim;
  if (!cu.empty()) {
    const int64_t row = cu[static_cast<size_t>(b)] + i, total = cu.back();
    return p.layout == ATTN_TUNE_BSHD ? (row * heads + h) * d : (h * total + row) * d;
  }
  const int64_t n = kv ? p.kv_len : p.q_len;
  return p.layout == ATTN_TUNE_BSHD ? ((b * n + i) * heads + h) * d : ((b * heads + h) * n + i) * d;
}

/// Sequence b's query and key counts: its own in a packed batch, else q_len and kv_len.
inline int64_t q_count(const attn_tune_problem& p, const packed_batch& packed, int64_t b) {
  return packed.cu_q.empty() ? p.q_len : packed.cu_q[static_cast<size_t>(b) + 1] - packed.cu_q[static_cast<size_t>(b)];
}
inline int64_t kv_count(const attn_tune_problem& p, const packed_batch& packed, int64_t b) {
  return packed.cu_k.empty() ? p.kv_len : packed.cu_k[static_cast<size_t>(b) + 1] - packed.cu_k[static_cast<size_t>(b)];
}

/// The keys [first, last] that query i of a sequence of n_q queries and n_k keys sees, with the
/// causal mask and the sliding window bottom-right aligned to the sequence (FlashAttention's
/// rule: the diagonal is i + n_k - n_q); first > last: none.
struct key_range {
  int64_t first, last;
};
inline key_range visible_keys(const attn_tune_problem& p, int64_t i, int64_t n_q, int64_t n_k) {
  const int64_t diagonal = i + n_k - n_q;
  key_range r{0, n_k - 1};
  if (p.causal) r.last = std::min(r.last, diagonal);
  if (p.window == 1 && p.window_right >= 0) r.last = std::min(r.last, diagonal + p.window_right);
  if (p.window == 1 && p.window_left >= 0) r.first = std::max<int64_t>(0, diagonal - p.window_left);
  return r;
}

/// attn-tune's FLOP count, for its TFLOPS: 2 (D + dv) per (query, key) pair of every head of every
/// sequence (each its own lengths in a packed batch), halved when causal; with a sliding window the
/// pairs it leaves visible, counted exactly (not halved). A window's right side of 0 must come as
/// causal, as attn-tune reads it (example_options does so).
inline double attention_flops(const attn_tune_problem& p, const packed_batch& packed = {}) {
  const int64_t dv = p.head_dim_v ? p.head_dim_v : p.head_dim;
  const bool window = p.window == 1 && (p.window_left >= 0 || p.window_right >= 0);
  double pairs = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t n_q = q_count(p, packed, b), n_k = kv_count(p, packed, b);
    if (!window) {
      pairs += static_cast<double>(n_q) * static_cast<double>(n_k) / (p.causal ? 2 : 1);
      continue;
    }
    for (int64_t i = 0; i < n_q; ++i) {
      const key_range r = visible_keys(p, i, n_q, n_k);
      pairs += static_cast<double>(std::max<int64_t>(0, r.last - r.first + 1));
    }
  }
  return 2.0 * static_cast<double>(p.heads) * static_cast<double>(p.head_dim + dv) * pairs;
}

struct comparison {
  double error = 0;    ///< max |O - O_fp64|
  double allowed = 0;  ///< 2 x max |O_naive - O_fp64| + 1e-4
};

/// Compares `out` (the kernel's O, as bits) with float64 attention of q, k, v (rounded floats),
/// for the (batch, head) pairs whose index is a multiple of `every` and the query rows whose index
/// (in its sequence) is a multiple of `row_every` (1: all), and its last. Each sequence is attended alone: a
/// packed batch's (`packed`: its offsets) by its own lengths, the causal mask and the window
/// bottom-right aligned to it; softcap caps the scores. A row that sees no key must be 0.
inline comparison compare(const attn_tune_problem& p, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<uint16_t>& out, int every = 1,
                          int row_every = 1, const packed_batch& packed = {}) {
  const bool bf16 = p.dtype == ATTN_TUNE_BF16;
  const int64_t H = p.heads, D = p.head_dim, group = p.heads / p.kv_heads;
  const int64_t DV = p.head_dim_v ? p.head_dim_v : D;  // V's and O's head dim
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const float cap = p.softcap;
  double error = 0, naive_error = 0;
  std::vector<double> s(static_cast<size_t>(p.kv_len)), s_naive(static_cast<size_t>(p.kv_len));
  for (int64_t bh = 0; bh < p.batch * H; bh += every) {
    const int64_t b = bh / H, h = bh % H, kh = h / group;
    const int64_t n_q = q_count(p, packed, b), n_k = kv_count(p, packed, b);
    for (int64_t i = 0; i < n_q; ++i) {
      if (i % row_every != 0 && i != n_q - 1) continue;  // and each sequence's last row, where it ends
      const auto [first, last] = visible_keys(p, i, n_q, n_k);
      const int64_t o_row = offset(p, false, b, h, i, DV, packed.cu_q);
      if (first > last) {
        for (int64_t c = 0; c < DV; ++c) {
          const float got = from_bits(out[o_row + c], bf16);
          error = std::max(error, std::isnan(got) ? INFINITY : std::abs(static_cast<double>(got)));
        }
        continue;
      }
      const float* qr = &q[offset(p, false, b, h, i, 0, packed.cu_q)];
      double mx = -INFINITY, mx_naive = -INFINITY;
      for (int64_t j = first; j <= last; ++j) {
        const float* kr = &k[offset(p, true, b, kh, j, 0, packed.cu_k)];
        double dot = 0;
        float dot_naive = 0;
        for (int64_t c = 0; c < D; ++c) {
          dot += static_cast<double>(qr[c]) * kr[c];
          dot_naive += round_to(static_cast<float>(qr[c] * scale), bf16) * kr[c];
        }
        s[j] = dot * scale, s_naive[j] = round_to(dot_naive, bf16);
        if (cap > 0) {  // softcap: C tanh(score / C), after the scale
          s[j] = cap * std::tanh(s[j] / cap);
          s_naive[j] = round_to(cap * std::tanh(static_cast<float>(s_naive[j]) / cap), bf16);
        }
        mx = std::max(mx, s[j]), mx_naive = std::max(mx_naive, s_naive[j]);
      }
      double sum = 0, sum_naive = 0;
      for (int64_t j = first; j <= last; ++j) {
        s[j] = std::exp(s[j] - mx), sum += s[j];
        s_naive[j] = std::exp(s_naive[j] - mx_naive), sum_naive += s_naive[j];
      }
      for (int64_t c = 0; c < DV; ++c) {
        double o = 0, o_naive = 0;
        for (int64_t j = first; j <= last; ++j) {
          const float vj = v[offset(p, true, b, kh, j, DV, packed.cu_k) + c];
          o += s[j] / sum * vj;
          o_naive += round_to(static_cast<float>(s_naive[j] / sum_naive), bf16) * vj;
        }
        const float got = from_bits(out[o_row + c], bf16);
        error = std::max(error, std::isnan(got) ? INFINITY : std::abs(got - o));
        naive_error = std::max(naive_error, std::abs(round_to(static_cast<float>(o_naive), bf16) - o));
      }
    }
  }
  return {error, 2 * naive_error + 1e-4};
}

}  // namespace example
