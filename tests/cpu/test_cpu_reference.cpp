#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/problem.hpp"
#include "verify/cpu_reference.hpp"

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

attn::problem small_shape(int64_t b, int64_t h, int64_t kvh, int64_t nq, int64_t nkv, int64_t d,
                        bool causal = false) {
  attn::problem s;
  s.batch = b;
  s.heads = h;
  s.kv_heads = kvh;
  s.q_len = nq;
  s.kv_len = nkv;
  s.head_dim = d;
  s.causal = causal;
  return s;
}

// Deterministic values in [-1, 1) with no structure the kernels could accidentally match.
std::vector<float> pattern(size_t n, unsigned seed) {
  std::vector<float> x(n);
  unsigned state = seed * 2654435761u + 12345u;
  for (float& value : x) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return x;
}

// [B, H, N, D] -> [B, N, H, D], with the indexing written out rather than via element_offset.
template <class T>
std::vector<T> to_bshd(const std::vector<T>& x, int64_t b_count, int64_t h_count, int64_t n,
                       int64_t d) {
  std::vector<T> y(x.size());
  for (int64_t b = 0; b < b_count; ++b)
    for (int64_t h = 0; h < h_count; ++h)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < d; ++e)
          y[((b * n + i) * h_count + h) * d + e] = x[((b * h_count + h) * n + i) * d + e];
  return y;
}

// Textbook attention on bhsd inputs: no max subtraction, independent of the library's code.
std::vector<double> naive_bhsd(const attn::problem& s, const std::vector<float>& q,
                               const std::vector<float>& k, const std::vector<float>& v,
                               std::vector<double>& lse) {
  const int64_t d = s.head_dim, group = s.heads / s.kv_heads;
  std::vector<double> out(q.size(), 0.0);
  lse.assign(s.batch * s.heads * s.q_len, -inf);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        const float* qi = &q[((b * s.heads + h) * s.q_len + i) * d];
        const int64_t kv0 = ((b * s.kv_heads + h / group) * s.kv_len) * d;
        std::vector<double> w(s.kv_len, 0.0);
        double sum = 0;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (s.causal && j > i + s.kv_len - s.q_len) continue;
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += double(qi[e]) * k[kv0 + j * d + e];
          w[j] = std::exp(dot / std::sqrt(double(d)));
          sum += w[j];
        }
        if (sum == 0) continue;
        lse[(b * s.heads + h) * s.q_len + i] = std::log(sum);
        for (int64_t j = 0; j < s.kv_len; ++j)
          for (int64_t e = 0; e < d; ++e)
            out[((b * s.heads + h) * s.q_len + i) * d + e] += w[j] / sum * v[kv0 + j * d + e];
      }
  return out;
}

void expect_near_all(const std::vector<double>& actual, const std::vector<double>& expected,
                     double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << "at " << i;
    } else {
      EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
    }
  }
}

}  // namespace

TEST(AttentionRow, TwoKeysHandComputed) {
  const float q[] = {1, 0};
  const float k[] = {1, 0, 0, 1};  // q.k = 1 and 0
  const float v[] = {1, 2, 3, 4};
  const double scale = 1 / std::sqrt(2.0);
  double out[2], lse;
  attn::attention_row_fp64(q, k, v, 2, 2, 2, scale, 1, out, &lse);

  const double e0 = std::exp(scale), e1 = std::exp(0.0);
  const double w0 = e0 / (e0 + e1), w1 = e1 / (e0 + e1);
  EXPECT_NEAR(out[0], w0 * 1 + w1 * 3, 1e-15);
  EXPECT_NEAR(out[1], w0 * 2 + w1 * 4, 1e-15);
  EXPECT_NEAR(lse, std::log(e0 + e1), 1e-15);
  // Spelled out: w0 = 1 / (1 + exp(-1/sqrt 2)) ~= 0.66976.
  EXPECT_NEAR(w0, 0.66976, 1e-5);
  EXPECT_NEAR(out[0], 1.66048, 1e-5);
}

TEST(AttentionRow, SingleKeyGivesExactlyV) {
  const float q[] = {0.5f, -2, 3};
  const float k[] = {1, 1, 1};
  const float v[] = {0.1f, -7, 42};
  double out[3], lse;
  attn::attention_row_fp64(q, k, v, 1, 3, 3, 0.25, 0, out, &lse);
  EXPECT_EQ(out[0], double(0.1f));
  EXPECT_EQ(out[1], -7.0);
  EXPECT_EQ(out[2], 42.0);
  EXPECT_EQ(lse, 0.25 * (0.5 - 2 + 3));  // log of a single weight is its score
}

TEST(AttentionRow, AllKeysMaskedGivesZerosAndMinusInfinity) {
  const float q[] = {1, 2};
  const float k[] = {1, 0, 0, 1};
  const float v[] = {5, 6, 7, 8};
  double out[2] = {99, 99}, lse = 0;
  attn::attention_row_fp64(q, k, v, 2, 2, 2, 1.0, -1, out, &lse);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_EQ(lse, -inf);
  attn::attention_row_fp64(q, k, v, 2, 2, 2, 1.0, -5, out, nullptr);  // lse is optional
  EXPECT_EQ(out[0], 0.0);
}

TEST(AttentionRow, IdenticalKeysAverageV) {
  const float q[] = {0.3f, 0.7f};
  const float k[] = {2, -1, 2, -1, 2, -1};
  const float v[] = {1, 10, 2, 20, 6, 60};
  double out[2], lse;
  attn::attention_row_fp64(q, k, v, 3, 2, 2, 0.5, 2, out, &lse);
  EXPECT_NEAR(out[0], 3.0, 1e-14);
  EXPECT_NEAR(out[1], 30.0, 1e-14);
  EXPECT_NEAR(lse, 0.5 * (0.3 * 2 - 0.7) + std::log(3.0), 1e-7);  // q is float: ~1e-8 off
}

TEST(AttentionRow, MaskHidesLaterKeys) {
  const float q[] = {1, 0};
  const float k[] = {0, 1, 5, 0, 9, 9};
  const float v[] = {1, 2, 100, 200, 300, 400};
  double out[2], lse;
  attn::attention_row_fp64(q, k, v, 3, 2, 2, 1.0, 0, out, &lse);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 2.0);
  EXPECT_EQ(lse, 0.0);

  // last_key 1: keys 0 and 1 with scores 0 and 5.
  attn::attention_row_fp64(q, k, v, 3, 2, 2, 1.0, 1, out, &lse);
  const double w1 = std::exp(5.0) / (1 + std::exp(5.0));
  EXPECT_NEAR(out[0], (1 - w1) * 1 + w1 * 100, 1e-12);
  EXPECT_NEAR(lse, std::log(1 + std::exp(5.0)), 1e-14);
}

TEST(AttentionRow, LastKeyPastTheEndMeansNoMask) {
  const float q[] = {1, -1};
  const float k[] = {0.5f, 0.25f, -1, 2};
  const float v[] = {3, 1, 4, 1};
  double a[2], b[2], lse_a, lse_b;
  attn::attention_row_fp64(q, k, v, 2, 2, 2, 0.7, 1, a, &lse_a);
  attn::attention_row_fp64(q, k, v, 2, 2, 2, 0.7, 100, b, &lse_b);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_EQ(lse_a, lse_b);
}

TEST(AttentionRow, RowStrideSkipsOtherHeads) {
  // Rows are 3 apart; the third column belongs to another head and must be ignored.
  const float q[] = {1, 0};
  const float k[] = {1, 0, 1e6f, 0, 1, -1e6f};
  const float v[] = {1, 2, 1e6f, 3, 4, -1e6f};
  double out[2], lse;
  attn::attention_row_fp64(q, k, v, 2, 3, 2, 1.0, 1, out, &lse);
  const double w0 = std::exp(1.0) / (std::exp(1.0) + 1);
  EXPECT_NEAR(out[0], w0 * 1 + (1 - w0) * 3, 1e-14);
  EXPECT_NEAR(out[1], w0 * 2 + (1 - w0) * 4, 1e-14);
  EXPECT_NEAR(lse, std::log(std::exp(1.0) + 1), 1e-14);
}

TEST(AttentionRow, LargeScoresDoNotOverflow) {
  const float q[] = {1000, 0};
  const float k[] = {1000, 0, 999, 0};  // scores 1e6 and 999000: exp of either overflows
  const float v[] = {1, 2, 3, 4};
  double out[2], lse;
  attn::attention_row_fp64(q, k, v, 2, 2, 2, 1.0, 1, out, &lse);
  EXPECT_EQ(out[0], 1.0);  // exp(-1000) vanishes next to 1
  EXPECT_EQ(out[1], 2.0);
  EXPECT_EQ(lse, 1e6);
}

TEST(LastVisibleKey, SelfAttention) {
  attn::problem s = small_shape(1, 1, 1, 4, 4, 2);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(attn::last_visible_key(s, i), 3);
  s.causal = true;
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(attn::last_visible_key(s, i), i);
}

TEST(LastVisibleKey, CrossAttentionIsBottomRightAligned) {
  attn::problem s = small_shape(1, 1, 1, 2, 5, 2);
  EXPECT_EQ(attn::last_visible_key(s, 0), 4);
  s.causal = true;
  EXPECT_EQ(attn::last_visible_key(s, 0), 3);  // 0 + 5 - 2
  EXPECT_EQ(attn::last_visible_key(s, 1), 4);

  s = small_shape(1, 1, 1, 5, 2, 2, true);  // more queries than keys: early rows see nothing
  EXPECT_EQ(attn::last_visible_key(s, 0), -3);
  EXPECT_EQ(attn::last_visible_key(s, 2), -1);
  EXPECT_EQ(attn::last_visible_key(s, 3), 0);
  EXPECT_EQ(attn::last_visible_key(s, 4), 1);
}

TEST(AttentionFp64, HandComputedTinyShape) {
  // B1 H1 N2 D2, causal: row 0 sees key 0 only, row 1 sees both.
  attn::problem s = small_shape(1, 1, 1, 2, 2, 2, true);
  const std::vector<float> q{1, 0, 0, 2}, k{1, 0, 0, 1}, v{1, 2, 3, 4};
  std::vector<double> lse;
  std::vector<double> out = attn::attention_fp64(s, q, k, v, &lse);
  ASSERT_EQ(out.size(), 4u);
  ASSERT_EQ(lse.size(), 2u);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 2.0);
  EXPECT_EQ(lse[0], 1 / std::sqrt(2.0));
  // Row 1: scores 0 and 2/sqrt(2) = sqrt(2).
  const double e0 = 1, e1 = std::exp(std::sqrt(2.0));
  EXPECT_NEAR(out[2], (e0 * 1 + e1 * 3) / (e0 + e1), 1e-14);
  EXPECT_NEAR(out[3], (e0 * 2 + e1 * 4) / (e0 + e1), 1e-14);
  EXPECT_NEAR(lse[1], std::log(e0 + e1), 1e-14);
}

TEST(AttentionFp64, MatchesNaiveAndBothLayoutsAgree) {
  for (bool causal : {false, true}) {
    attn::problem s = small_shape(2, 3, 3, 5, 5, 4, causal);
    std::vector<float> q = pattern(2 * 3 * 5 * 4, 1);
    std::vector<float> k = pattern(2 * 3 * 5 * 4, 2);
    std::vector<float> v = pattern(2 * 3 * 5 * 4, 3);
    std::vector<double> expected_lse, lse_bhsd, lse_bshd;
    std::vector<double> expected = naive_bhsd(s, q, k, v, expected_lse);

    std::vector<double> bhsd = attn::attention_fp64(s, q, k, v, &lse_bhsd);
    expect_near_all(bhsd, expected, 1e-13);
    expect_near_all(lse_bhsd, expected_lse, 1e-13);

    s.layout = attn::layout::bshd;
    std::vector<double> bshd = attn::attention_fp64(s, to_bshd(q, 2, 3, 5, 4),
                                                    to_bshd(k, 2, 3, 5, 4),
                                                    to_bshd(v, 2, 3, 5, 4), &lse_bshd);
    // Same arithmetic in the same order, only addressed differently: bitwise equal.
    EXPECT_EQ(bshd, to_bshd(bhsd, 2, 3, 5, 4));
    EXPECT_EQ(lse_bshd, lse_bhsd);  // lse is [B, H, Nq] whatever the layout
  }
}

TEST(AttentionFp64, GroupedQueryAttention) {
  // heads 4, kv_heads 2: heads 0 and 1 read kv head 0, heads 2 and 3 read kv head 1.
  attn::problem s = small_shape(1, 4, 2, 3, 3, 4);
  std::vector<float> q_one_head = pattern(3 * 4, 7);
  std::vector<float> q;
  for (int h = 0; h < 4; ++h) q.insert(q.end(), q_one_head.begin(), q_one_head.end());
  std::vector<float> k = pattern(2 * 3 * 4, 8), v = pattern(2 * 3 * 4, 9);

  std::vector<double> out = attn::attention_fp64(s, q, k, v);
  const size_t head = 3 * 4;
  auto head_slice = [&](size_t h) {
    return std::vector<double>(out.begin() + h * head, out.begin() + (h + 1) * head);
  };
  EXPECT_EQ(head_slice(0), head_slice(1));
  EXPECT_EQ(head_slice(2), head_slice(3));
  EXPECT_NE(head_slice(0), head_slice(2));

  // Head 1 equals plain attention against kv head 0 alone; head 3 against kv head 1.
  attn::problem one = small_shape(1, 1, 1, 3, 3, 4);
  std::vector<float> k0(k.begin(), k.begin() + head), v0(v.begin(), v.begin() + head);
  std::vector<float> k1(k.begin() + head, k.end()), v1(v.begin() + head, v.end());
  EXPECT_EQ(head_slice(1), attn::attention_fp64(one, q_one_head, k0, v0));
  EXPECT_EQ(head_slice(3), attn::attention_fp64(one, q_one_head, k1, v1));

  std::vector<double> expected_lse, lse;
  expect_near_all(attn::attention_fp64(s, q, k, v, &lse), naive_bhsd(s, q, k, v, expected_lse),
                  1e-13);
  expect_near_all(lse, expected_lse, 1e-13);

  // The same in bshd.
  s.layout = attn::layout::bshd;
  std::vector<double> bshd = attn::attention_fp64(s, to_bshd(q, 1, 4, 3, 4),
                                                  to_bshd(k, 1, 2, 3, 4), to_bshd(v, 1, 2, 3, 4));
  EXPECT_EQ(bshd, to_bshd(out, 1, 4, 3, 4));
}

TEST(AttentionFp64, CrossAttention) {
  for (bool causal : {false, true}) {
    for (auto [nq, nkv] : {std::pair<int64_t, int64_t>{2, 5}, {5, 2}}) {
      attn::problem s = small_shape(1, 2, 1, nq, nkv, 4, causal);
      std::vector<float> q = pattern(2 * nq * 4, 11);
      std::vector<float> k = pattern(nkv * 4, 12), v = pattern(nkv * 4, 13);
      std::vector<double> expected_lse, lse;
      std::vector<double> expected = naive_bhsd(s, q, k, v, expected_lse);
      expect_near_all(attn::attention_fp64(s, q, k, v, &lse), expected, 1e-13);
      expect_near_all(lse, expected_lse, 1e-13);

      s.layout = attn::layout::bshd;
      std::vector<double> bshd = attn::attention_fp64(s, to_bshd(q, 1, 2, nq, 4), k, v);
      expect_near_all(bshd, to_bshd(expected, 1, 2, nq, 4), 1e-13);
    }
  }
}

TEST(AttentionFp64, CausalWithMoreQueriesThanKeysMasksEarlyRows) {
  attn::problem s = small_shape(1, 1, 1, 4, 2, 2, true);
  std::vector<float> q = pattern(8, 21), k = pattern(4, 22), v = pattern(4, 23);
  std::vector<double> lse;
  std::vector<double> out = attn::attention_fp64(s, q, k, v, &lse);
  // Rows 0 and 1 see no key (last key -2, -1); row 2 sees key 0 only.
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[3], 0.0);
  EXPECT_EQ(lse[0], -inf);
  EXPECT_EQ(lse[1], -inf);
  EXPECT_EQ(out[4], double(v[0]));
  EXPECT_EQ(out[5], double(v[1]));
  EXPECT_TRUE(std::isfinite(lse[3]));
}

TEST(AttentionFp64, RejectsMismatchedInputs) {
  attn::problem s = small_shape(1, 2, 1, 3, 3, 4);
  std::vector<float> q(2 * 3 * 4), kv(3 * 4);
  EXPECT_NO_THROW(attn::attention_fp64(s, q, kv, kv));
  EXPECT_THROW(attn::attention_fp64(s, q, q, q), std::invalid_argument);  // k too big
  EXPECT_THROW(attn::attention_fp64(s, kv, kv, kv), std::invalid_argument);  // q too small
  s.kv_heads = 3;  // 2 % 3 != 0
  EXPECT_THROW(attn::attention_fp64(s, q, kv, kv), std::invalid_argument);
}
