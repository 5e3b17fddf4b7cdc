// The float64 reference of attention's backward pass (verify/cpu_gradients.hpp, issue 22): its
// gradients against central differences of the forward reference (attention_fp64) under every mask
// and option it takes, a hand-computed row, its O and LSE against attention_fp64's, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "invalid_input_message.hpp"
#include "verify/cpu_gradients.hpp"
#include "verify/cpu_reference.hpp"

namespace attn {
namespace {

using attn::testing::invalid_input_message;

constexpr double inf = std::numeric_limits<double>::infinity();

struct inputs {
  std::vector<float> q, k, v, d_o;
};

// B 2, head_dim 32 (the smallest valid), a few rows: every gradient element can be differenced.
problem tiny(int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len) {
  problem s;
  s.batch = 2, s.heads = heads, s.kv_heads = kv_heads, s.q_len = q_len, s.kv_len = kv_len, s.head_dim = 32;
  return s;
}

// Standard-normal values from a fixed seed (none is zero); Q and K times `spread`, which scales the
// scores (by spread^2) so that a softcap bites.
inputs random_inputs(const problem& s, float spread, unsigned seed = 22) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t q_rows = attn::q_rows(s) * s.heads, kv_rows = attn::kv_rows(s) * s.kv_heads;  // a packed batch's
  inputs x;
  x.q.resize(static_cast<size_t>(q_rows * s.head_dim));
  x.k.resize(static_cast<size_t>(kv_rows * s.head_dim));
  x.v.resize(static_cast<size_t>(kv_rows * value_dim(s)));
  x.d_o.resize(static_cast<size_t>(q_rows * value_dim(s)));
  for (auto* t : {&x.q, &x.k})
    for (float& e : *t) e = spread * normal(rng);
  for (auto* t : {&x.v, &x.d_o})
    for (float& e : *t) e = normal(rng);
  return x;
}

gradients_fp64 gradients(const problem& s, const inputs& x) {
  return attention_gradients_fp64(s, x.q, x.k, x.v, x.d_o);
}

// The loss whose gradients the reference gives: L = sum(O * dO), O from attention_fp64.
double loss(const problem& s, const inputs& x) {
  const std::vector<double> o = attention_fp64(s, x.q, x.k, x.v);
  double sum = 0;
  for (size_t e = 0; e < o.size(); ++e) sum += o[e] * x.d_o[e];
  return sum;
}

// Whether any of the n elements of x from `at` on is not zero.
bool any_nonzero(const std::vector<double>& x, int64_t at, int64_t n) {
  return std::any_of(x.begin() + at, x.begin() + at + n, [](double e) { return e != 0; });
}

double largest_magnitude(const std::vector<double>& x) {
  double m = 0;
  for (const double e : x) m = std::max(m, std::abs(e));
  return m;
}

// Central differences of L in each element of one input tensor against its gradient. The inputs
// are floats, so the step divided by is the one float(x +- h) took (exact in double); L is float64
// throughout, so the differences are good to about h^2: within 1e-7 of the tensor's largest
// element on these cases, checked to 1e-6 of it.
void expect_gradient_matches_differences(const problem& s, inputs x, std::vector<float> inputs::*tensor,
                                         const std::vector<double>& gradient, const char* name) {
  std::vector<float>& t = x.*tensor;
  ASSERT_EQ(gradient.size(), t.size()) << name;
  const double largest = largest_magnitude(gradient), step = 1e-3;
  ASSERT_GT(largest, 0) << name << " is all zeros";
  double worst = 0, worst_gradient = 0, worst_difference = 0;
  size_t worst_at = 0;
  for (size_t e = 0; e < t.size(); ++e) {
    const float kept = t[e];
    t[e] = static_cast<float>(kept + step);
    const double up = t[e], loss_up = loss(s, x);
    t[e] = static_cast<float>(kept - step);
    const double down = t[e], loss_down = loss(s, x);
    t[e] = kept;
    const double difference = (loss_up - loss_down) / (up - down);
    if (std::abs(difference - gradient[e]) > worst) {
      worst = std::abs(difference - gradient[e]), worst_at = e;
      worst_gradient = gradient[e], worst_difference = difference;
    }
  }
  EXPECT_LE(worst, 1e-6 * largest) << name << "[" << worst_at << "]: reference " << worst_gradient
                                   << ", central difference " << worst_difference << " (largest |" << name
                                   << "| " << largest << ")";
}

struct gradient_case {
  const char* label;
  problem s;
  float spread = 1;
};
void PrintTo(const gradient_case& c, std::ostream* os) { *os << c.label; }

std::vector<gradient_case> gradient_cases() {
  std::vector<gradient_case> all;
  problem s = tiny(2, 2, 5, 7);
  all.push_back({"dense_cross", s});
  s.causal = true;
  all.push_back({"causal_fewer_queries", s});
  s = tiny(2, 2, 9, 5), s.causal = true;  // queries 0..3 see no key
  all.push_back({"causal_more_queries", s});
  s = tiny(8, 2, 6, 6), s.causal = true;
  all.push_back({"gqa_4_to_1", s});
  s = tiny(4, 1, 6, 5);
  all.push_back({"mqa_cross", s});
  s = tiny(4, 2, 7, 6), s.causal = true, s.layout = layout::bshd;
  all.push_back({"bshd_gqa_causal", s});
  s = tiny(2, 2, 8, 8), s.window_left = 3, s.window_right = 2;
  all.push_back({"window_3_2", s});
  s = tiny(2, 2, 6, 9), s.causal = true, s.window_left = 2;  // key 0 is in no query's window
  all.push_back({"causal_window_cross", s});
  s = tiny(2, 2, 6, 7), s.softcap = 5;
  all.push_back({"softcap_5", s, 3});
  s = tiny(2, 2, 5, 7), s.causal = true, s.head_dim_v = 48;
  all.push_back({"value_dim_48", s});
  s = tiny(4, 1, 8, 5), s.causal = true, s.window_left = 1, s.softcap = 5, s.head_dim_v = 48, s.layout = layout::bshd;
  all.push_back({"bshd_mqa_window_softcap_value_dim", s, 3});
  // A packed batch: each sequence its own lengths, rows one after another (causal per sequence).
  s = tiny(4, 2, 5, 7), s.causal = true, s.seqlens = "5/3", s.kv_seqlens = "4/7";
  all.push_back({"packed_causal_gqa", s});
  s = tiny(2, 1, 6, 6), s.seqlens = "6/2", s.layout = layout::bshd, s.window_left = 2, s.head_dim_v = 48;
  all.push_back({"packed_bshd_window_value_dim", s});
  return all;
}

class differences : public ::testing::TestWithParam<gradient_case> {};

TEST_P(differences, match_dq_dk_dv) {
  const gradient_case& c = GetParam();
  const inputs x = random_inputs(c.s, c.spread);
  const gradients_fp64 g = gradients(c.s, x);
  expect_gradient_matches_differences(c.s, x, &inputs::q, g.dq, "dq");
  expect_gradient_matches_differences(c.s, x, &inputs::k, g.dk, "dk");
  expect_gradient_matches_differences(c.s, x, &inputs::v, g.dv, "dv");
}

TEST_P(differences, o_and_lse_are_attention_fp64s) {
  const gradient_case& c = GetParam();
  const inputs x = random_inputs(c.s, c.spread);
  const gradients_fp64 g = gradients(c.s, x);
  std::vector<double> lse;
  const std::vector<double> o = attention_fp64(c.s, x.q, x.k, x.v, &lse);
  ASSERT_EQ(g.o.size(), o.size());
  for (size_t e = 0; e < o.size(); ++e) EXPECT_NEAR(g.o[e], o[e], 1e-12) << "o[" << e << "]";
  ASSERT_EQ(g.lse.size(), lse.size());
  for (size_t e = 0; e < lse.size(); ++e) {
    if (std::isinf(lse[e])) {
      EXPECT_EQ(g.lse[e], lse[e]) << "lse[" << e << "]";
    } else {
      EXPECT_NEAR(g.lse[e], lse[e], 1e-12) << "lse[" << e << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(cpu_gradients, differences, ::testing::ValuesIn(gradient_cases()),
                         [](const auto& info) { return std::string(info.param.label); });

// One query, two keys (d 2): with p0 = 1 / (1 + exp(-scale)) and dS_0 = -dS_1 = p0 p1 dO.(V0 - V1),
// dQ = scale dS_0 (K0 - K1), dK_0 = -dK_1 = scale dS_0 Q, dV_j = p_j dO.
TEST(cpu_gradients, two_keys_hand_computed) {
  problem s;
  s.q_len = 1, s.kv_len = 2, s.head_dim = 2;
  const inputs x{{1, 0}, {1, 0, 0, 1}, {1, 2, 3, 4}, {1, -2}};  // q.k = 1 and 0; dO.(V0 - V1) = 2
  const gradients_fp64 g = gradients(s, x);
  const double scale = 1 / std::sqrt(2.0), p0 = 1 / (1 + std::exp(-scale)), p1 = 1 - p0;
  const double ds0 = p0 * p1 * 2;
  const std::vector<double> dq = {scale * ds0, -scale * ds0}, dk = {scale * ds0, 0, -scale * ds0, 0},
                            dv = {p0, -2 * p0, p1, -2 * p1}, o = {p0 + 3 * p1, 2 * p0 + 4 * p1};
  for (size_t e = 0; e < 2; ++e) EXPECT_NEAR(g.dq[e], dq[e], 1e-15) << "dq[" << e << "]";
  for (size_t e = 0; e < 4; ++e) EXPECT_NEAR(g.dk[e], dk[e], 1e-15) << "dk[" << e << "]";
  for (size_t e = 0; e < 4; ++e) EXPECT_NEAR(g.dv[e], dv[e], 1e-15) << "dv[" << e << "]";
  for (size_t e = 0; e < 2; ++e) EXPECT_NEAR(g.o[e], o[e], 1e-15) << "o[" << e << "]";
  EXPECT_NEAR(g.lse[0], std::log(std::exp(scale) + 1), 1e-15);
  // Spelled out: p0 ~= 0.669762, p0 p1 ~= 0.221181, scale dS_0 ~= 0.312797.
  EXPECT_NEAR(g.dq[0], 0.312797, 1e-6);
  EXPECT_NEAR(g.dk[2], -0.312797, 1e-6);
  EXPECT_NEAR(g.dv[1], -1.339523, 1e-6);
  EXPECT_NEAR(g.lse[0], 1.107940, 1e-6);
}

// A row that sees one key has O = V_j whatever Q and K are: dQ and dK are zero and dV is dO.
TEST(cpu_gradients, one_visible_key_moves_only_v) {
  problem s;
  s.q_len = 2, s.kv_len = 2, s.head_dim = 2, s.causal = true;  // row 0 sees key 0 only
  const inputs x{{0.5f, -1, 2, 1}, {1, 3, -2, 1}, {1, 2, 3, 4}, {-1, 2, 0, 0}};  // row 1's dO is zero
  const gradients_fp64 g = gradients(s, x);
  for (size_t e = 0; e < 4; ++e) EXPECT_EQ(g.dq[e], 0.0) << "dq[" << e << "]";
  for (size_t e = 0; e < 4; ++e) EXPECT_EQ(g.dk[e], 0.0) << "dk[" << e << "]";
  EXPECT_EQ(g.dv, (std::vector<double>{-1, 2, 0, 0}));
}

// Causal with more queries than keys: queries 0..3 see no key. Their O and dQ are zero and their LSE
// -inf (query 4 sees one key: its dQ is zero too); a key in no query's window has zero dK and dV.
TEST(cpu_gradients, rows_and_keys_out_of_sight_have_zero_gradients) {
  problem s = tiny(2, 1, 9, 5);
  s.causal = true;
  const gradients_fp64 g = gradients(s, random_inputs(s, 1));
  const int64_t d = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        const int64_t at = element_offset(s.layout, s.heads, s.q_len, d, b, h, i);
        const bool sees = i >= 4;
        EXPECT_EQ(std::isinf(g.lse[static_cast<size_t>((b * s.heads + h) * s.q_len + i)]), !sees) << "row " << i;
        EXPECT_EQ(any_nonzero(g.dq, at, d), i >= 5) << "dq row " << i;
        EXPECT_EQ(any_nonzero(g.o, at, d), sees) << "o row " << i;
      }

  s = tiny(2, 2, 6, 9), s.causal = true, s.window_left = 2;  // query i sees keys i + 1 .. i + 3
  const gradients_fp64 w = gradients(s, random_inputs(s, 1));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.kv_heads; ++h)
      for (int64_t j = 0; j < s.kv_len; ++j) {
        const int64_t at = element_offset(s.layout, s.kv_heads, s.kv_len, d, b, h, j);
        const bool seen = j >= 1;
        EXPECT_EQ(any_nonzero(w.dk, at, d), seen) << "dk row " << j;
        EXPECT_EQ(any_nonzero(w.dv, at, d), seen) << "dv row " << j;
      }
}

// The softcap cases' scores reach past the cap (where tanh bends: |score| > softcap), so their
// differences test the cap's derivative and not a nearly linear stretch of it.
TEST(cpu_gradients, softcap_cases_reach_the_cap) {
  int softcap_cases = 0;
  for (const gradient_case& c : gradient_cases()) {
    if (!has_softcap(c.s)) continue;
    ++softcap_cases;
    const problem& s = c.s;
    const inputs x = random_inputs(s, c.spread);
    double largest = 0;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.heads; ++h)
        for (int64_t i = 0; i < s.q_len; ++i)
          for (int64_t j = 0; j < s.kv_len; ++j) {
            const int64_t kv_head = h / (s.heads / s.kv_heads);
            const float* q = &x.q[element_offset(s.layout, s.heads, s.q_len, s.head_dim, b, h, i)];
            const float* k = &x.k[element_offset(s.layout, s.kv_heads, s.kv_len, s.head_dim, b, kv_head, j)];
            double dot = 0;
            for (int64_t e = 0; e < s.head_dim; ++e) dot += double(q[e]) * k[e];
            largest = std::max(largest, std::abs(dot) / std::sqrt(double(s.head_dim)));
          }
    EXPECT_GT(largest, 2 * s.softcap) << c.label;
  }
  EXPECT_EQ(softcap_cases, 2);
}

TEST(cpu_gradients, refusals_name_the_field) {
  const problem s = tiny(2, 2, 5, 7);
  const inputs x = random_inputs(s, 1);
  const auto message = [&](const problem& p) {
    return invalid_input_message([&] { attention_gradients_fp64(p, x.q, x.k, x.v, x.d_o); });
  };
  const auto expect_names = [&](const problem& p, const std::string& field) {
    const std::string m = message(p);
    EXPECT_EQ(m.rfind(field + " ", 0), 0u) << m;
    EXPECT_NE(m.find("not supported by the gradient reference yet"), std::string::npos) << m;
  };
  problem p = s;
  p.kv_lens = "3/7";
  expect_names(p, "kv_lens");
  p = s, p.kv_seqlens = "7/2";  // without seqlens
  expect_names(p, "kv_seqlens");
  p = s, p.page_size = 16;
  expect_names(p, "page_size");

  std::vector<float> short_d_o(x.d_o.begin(), x.d_o.end() - 1);
  EXPECT_THROW(attention_gradients_fp64(s, x.q, x.k, x.v, short_d_o), std::invalid_argument);
}

}  // namespace
}  // namespace attn
