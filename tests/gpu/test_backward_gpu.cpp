// The backward pass (kernels/fa2_bwd.cuh) on the GPU: every default variant's dQ, dK and dV against
// the float64 gradients on fresh random inputs (ragged lengths, N = 1, N_q != N_kv both ways, GQA,
// MQA, both layouts, both dtypes, causal and not, sliding windows, softcap), with FlashAttention's rule: the error at most
// twice that of the same math done in the input precision, plus a small absolute term. Outputs are
// poisoned (NaN) before each run, so a gradient never written fails. Reruns are bit-identical, and
// planted defects (a dropped GQA reduction, a missing dO.O term, off-by-one causal masks, dS without
// delta; in both families) come out wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <random>

#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "codegen/compile_pool.hpp"
#include "core/numeric.hpp"
#include "../backward_defects.hpp"
#include "gpu_fixture.hpp"
#include "../cpu/temp_dir.hpp"
#include "verify/cpu_gradients.hpp"

namespace attn {
namespace {

using testing::gpu_test;

// A tensor's values as the kernels see them (rounded to the element type), and its bits.
struct host_tensor {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};
uint16_t to_bits(dtype t, float x) { return t == dtype::bf16 ? float_to_bf16(x) : float_to_half(x); }
float round_to(dtype t, double x) { return elem_to_float(t, to_bits(t, static_cast<float>(x))); }

host_tensor random_tensor(dtype t, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  host_tensor out;
  for (size_t i = 0; i < n; ++i) {
    float x = normal(rng);
    if (x == 0.f) x = 0.5f;  // no zeros in test data
    out.bits.push_back(to_bits(t, x));
    out.values.push_back(elem_to_float(t, out.bits.back()));
  }
  return out;
}
host_tensor rounded(dtype t, const std::vector<double>& x) {
  host_tensor out;
  for (double v : x) {
    out.bits.push_back(to_bits(t, static_cast<float>(v)));
    out.values.push_back(elem_to_float(t, out.bits.back()));
  }
  return out;
}

// The same math as the float64 reference done the way a framework does it in the input precision
// (PyTorch's eager attention and its autograd in bf16/fp16): each product's result rounded to the
// element type, the softmax in fp32 then rounded. Its error against float64 sets the tolerance.
struct lowp_grads {
  std::vector<double> dq, dk, dv;
};
lowp_grads gradients_lowp(const problem& s, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<float>& d_o) {
  const int64_t D = s.head_dim, DV = value_dim(s), group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(double(D)), cap = s.softcap;
  auto r = [&](double x) { return double(round_to(s.dtype, x)); };
  lowp_grads g;
  g.dq.assign(q.size(), 0), g.dk.assign(k.size(), 0), g.dv.assign(v.size(), 0);
  std::vector<double> dk_acc(k.size(), 0), dv_acc(v.size(), 0);
  // Each sequence's own lengths and (a packed batch) first rows.
  const std::vector<int64_t> q_lens = q_lengths(s), kv_lens = kv_lengths(s);
  const std::vector<int64_t> q_starts = cumulative_lengths(q_lens), kv_starts = cumulative_lengths(kv_lens);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kh = h / group, q_len = q_lens[size_t(b)], kv_len = kv_lens[size_t(b)];
      auto qi = [&](int64_t i) { return row_offset(s, false, D, b, h, i, q_starts); };
      auto kj = [&](int64_t j) { return row_offset(s, true, D, b, kh, j, kv_starts); };
      auto vj = [&](int64_t j) { return row_offset(s, true, DV, b, kh, j, kv_starts); };
      auto oi = [&](int64_t i) { return row_offset(s, false, DV, b, h, i, q_starts); };
      for (int64_t i = 0; i < q_len; ++i) {
        // The keys [first, last] query i sees: causal and a window bottom-right aligned.
        const int64_t diagonal = i + kv_len - q_len;
        int64_t first = 0, last = kv_len - 1;
        if (s.causal) last = std::min(last, diagonal);
        if (s.window_right >= 0) last = std::min(last, diagonal + s.window_right);
        if (s.window_left >= 0) first = std::max<int64_t>(0, diagonal - s.window_left);
        if (last < first) continue;
        const int64_t n = last - first + 1;
        std::vector<double> p(n), dp(n), dtanh(n, 1.0);
        double mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += r(q[qi(i) + d] * scale) * k[kj(first + j) + d];
          p[j] = r(dot);
          if (cap > 0) {  // softcap: tanh in the element type, and its derivative for dS
            const double th = r(std::tanh(p[j] / cap));
            p[j] = r(cap * th), dtanh[j] = r(1 - th * th);
          }
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - mx));
        double delta = 0;
        for (int64_t j = 0; j < n; ++j) {
          p[j] = r(p[j] / sum);
          double dot = 0;
          for (int64_t d = 0; d < DV; ++d) dot += d_o[oi(i) + d] * v[vj(first + j) + d];
          dp[j] = r(dot);
          delta += p[j] * dp[j];
        }
        delta = r(delta);
        for (int64_t j = 0; j < n; ++j) {
          const double ds = cap > 0 ? r(r(p[j] * (dp[j] - delta)) * dtanh[j]) : r(p[j] * (dp[j] - delta));
          for (int64_t d = 0; d < D; ++d) {
            g.dq[qi(i) + d] += ds * k[kj(first + j) + d] * scale;
            dk_acc[kj(first + j) + d] += ds * q[qi(i) + d] * scale;
          }
          for (int64_t d = 0; d < DV; ++d) dv_acc[vj(first + j) + d] += p[j] * d_o[oi(i) + d];
        }
      }
    }
  for (auto& x : g.dq) x = r(x);
  for (size_t i = 0; i < k.size(); ++i) g.dk[i] = r(dk_acc[i]);
  for (size_t i = 0; i < v.size(); ++i) g.dv[i] = r(dv_acc[i]);
  return g;
}

double max_error(const std::vector<double>& ref, const std::vector<double>& got) {
  double e = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::abs(ref[i] - got[i]);
    if (std::isnan(d)) return INFINITY;
    e = std::max(e, d);
  }
  return e;
}

struct backward_case {
  const char* what;
  problem s;
};
problem shape(int64_t b, int64_t h, int64_t hkv, int64_t nq, int64_t nkv, int64_t d, bool causal,
              dtype t = dtype::bf16, layout l = layout::bhsd) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hkv, s.q_len = nq, s.kv_len = nkv, s.head_dim = d, s.causal = causal;
  s.dtype = t, s.layout = l;
  return s;
}
// A sliding window (both families' backward take it).
problem windowed(problem s, int64_t left, int64_t right) {
  s.window_left = left, s.window_right = right;
  return s;
}
// Softcap C (both families' backward take it): C small enough that tanh bends most of the scores of
// unit normal inputs (|score| up to about 4), or a model's 30 or 50.
problem capped(problem s, double c) {
  s.softcap = c;
  return s;
}
// A packed variable-length batch (both families' backward take it): each sequence's query and key lengths.
problem packed(problem s, const char* seqlens, const char* kv_seqlens) {
  s.seqlens = seqlens, s.kv_seqlens = kv_seqlens;
  return s;
}
// V's own head dim (both families' backward take it; MLA's prefill is d 192, dv 128).
problem with_dv(problem s, int64_t dv) {
  s.head_dim_v = dv;
  return s;
}
std::vector<backward_case> cases() {
  return {{"plain", shape(2, 3, 3, 200, 200, 64, false)},
          {"causal_gqa_cross", shape(1, 8, 2, 100, 300, 128, true)},
          {"causal_mqa_more_queries_fp16_bshd", shape(2, 4, 1, 300, 100, 64, true, dtype::fp16, layout::bshd)},
          {"one_by_one", shape(3, 2, 2, 1, 1, 64, false)},
          {"ragged_d96_causal", shape(1, 2, 1, 77, 129, 96, true)},
          {"ragged_fp16_full_d128", shape(1, 2, 2, 130, 67, 128, false, dtype::fp16)},
          {"d256_causal_gqa_split_dkdv", shape(1, 4, 2, 150, 170, 256, true)},
          {"d192_fp16_split_dkdv", shape(1, 2, 2, 97, 90, 192, false, dtype::fp16)},
          {"causal_window_gqa_cross", windowed(shape(1, 4, 2, 150, 260, 64, true), 40, -1)},
          {"two_sided_window_fp16_bshd", windowed(shape(2, 2, 1, 130, 130, 128, false, dtype::fp16, layout::bshd), 17, 33)},
          {"left_window_only", windowed(shape(1, 2, 2, 90, 200, 64, false), 25, -1)},
          {"softcap_causal_gqa_cross", capped(shape(1, 4, 2, 150, 200, 64, true), 2.5)},
          {"softcap_window_fp16_bshd_d128", capped(windowed(shape(1, 2, 1, 130, 170, 128, false, dtype::fp16, layout::bshd), 30, 20), 30)},
          {"softcap_d256_split_dkdv", capped(shape(1, 2, 2, 97, 90, 256, true), 5)},
          {"mla_d192_dv128_causal_gqa", with_dv(shape(1, 4, 2, 130, 170, 192, true), 128)},
          {"d64_dv128_fp16_bshd", with_dv(shape(2, 2, 1, 77, 129, 64, false, dtype::fp16, layout::bshd), 128)},
          {"d128_dv64_window_softcap", capped(windowed(with_dv(shape(1, 2, 2, 100, 100, 128, true), 64), 30, -1), 20)},
          // 128- and 64-byte swizzles side by side (wgmma's tiles of d and dv columns).
          {"d128_dv96_causal_cross", with_dv(shape(1, 2, 2, 100, 140, 128, true), 96)},
          // A sequence of no query and one of no key among them (their gradients are zero).
          {"packed_causal_gqa", packed(shape(4, 4, 2, 150, 190, 64, true), "150/37/0/90", "190/64/20/0")},
          {"packed_bshd_fp16_d128_dv64", with_dv(packed(shape(3, 2, 1, 130, 130, 128, false, dtype::fp16, layout::bshd), "1/130/77", ""), 64)},
          {"packed_causal_d128_bshd", packed(shape(2, 4, 4, 190, 190, 128, true, dtype::bf16, layout::bshd), "190/64", "")}};
}

// One problem's inputs, float64 gradients and tolerance, and the device buffers of a run.
class backward_run {
 public:
  backward_run(const device_runtime& rt, const problem& s, uint64_t seed) : m_rt(rt), m_s(s) {
    std::mt19937_64 rng(seed);
    // Rows as allocated (a packed batch's totals), then V's head dim.
    const size_t nq = q_rows(s) * s.heads * s.head_dim, nk = kv_rows(s) * s.kv_heads * s.head_dim;
    const size_t no = nq / s.head_dim * value_dim(s), nv = nk / s.head_dim * value_dim(s);
    q = random_tensor(s.dtype, nq, rng), k = random_tensor(s.dtype, nk, rng), v = random_tensor(s.dtype, nv, rng);
    d_o = random_tensor(s.dtype, no, rng);
    ref = attention_gradients_fp64(s, q.values, k.values, v.values, d_o.values);
    o = rounded(s.dtype, ref.o);
    const lowp_grads low = gradients_lowp(s, q.values, k.values, v.values, d_o.values);
    // FlashAttention's rule: 2x the input-precision math's error, plus a small absolute term.
    allowed_dq = 2 * max_error(ref.dq, low.dq) + 1e-3;
    allowed_dk = 2 * max_error(ref.dk, low.dk) + 1e-3;
    allowed_dv = 2 * max_error(ref.dv, low.dv) + 1e-3;
    for (double x : ref.lse) lse.push_back(static_cast<float>(x));
    auto upload = [&](const void* src, size_t bytes) {
      void* p = rt.allocate(static_cast<int64_t>(bytes));
      m_owned.push_back(p);
      rt.copy_to_device(p, src, static_cast<int64_t>(bytes));
      return p;
    };
    backward_tensors t;
    t.q = upload(q.bits.data(), nq * 2), t.k = upload(k.bits.data(), nk * 2), t.v = upload(v.bits.data(), nv * 2);
    t.o = upload(o.bits.data(), no * 2), t.d_o = upload(d_o.bits.data(), no * 2);
    t.lse = static_cast<const float*>(upload(lse.data(), lse.size() * 4));
    t.delta = static_cast<float*>(upload(lse.data(), lse.size() * 4));
    t.dq = upload(q.bits.data(), nq * 2), t.dk = upload(k.bits.data(), nk * 2), t.dv = upload(v.bits.data(), nv * 2);
    std::vector<float> poisoned(static_cast<size_t>(dq_accum_bytes(s) / 4), std::nanf(""));  // the variant zeroes it
    t.dq_accum = static_cast<float*>(upload(poisoned.data(), poisoned.size() * 4));
    if (is_varlen(s)) {  // a packed batch: each sequence's first rows
      std::vector<int> cu_q, cu_k;
      for (int64_t x : cumulative_lengths(q_lengths(s))) cu_q.push_back(static_cast<int>(x));
      for (int64_t x : cumulative_lengths(kv_lengths(s))) cu_k.push_back(static_cast<int>(x));
      t.cu_seqlens_q = static_cast<const int*>(upload(cu_q.data(), cu_q.size() * 4));
      t.cu_seqlens_k = static_cast<const int*>(upload(cu_k.data(), cu_k.size() * 4));
      t.total_q = q_rows(s), t.total_kv = kv_rows(s);
    }
    m_tensors = t;
    params = make_bwd_params(s, t);
  }
  ~backward_run() {
    for (void* p : m_owned) m_rt.release(p);
  }
  backward_run(const backward_run&) = delete;
  backward_run& operator=(const backward_run&) = delete;

  // Poisons dQ, dK, dV and delta (NaN bits), runs the variant, and returns the three gradients.
  struct result {
    std::vector<uint16_t> dq, dk, dv;
  };
  result run(const loaded_backward& b) const {
    const size_t nq = q.bits.size(), nk = k.bits.size(), nv = v.bits.size();
    m_rt.memset(m_tensors.dq, 0xff, int64_t(nq * 2));
    m_rt.memset(m_tensors.dk, 0xff, int64_t(nk * 2));
    m_rt.memset(m_tensors.dv, 0xff, int64_t(nv * 2));
    m_rt.memset(m_tensors.delta, 0xff, int64_t(lse.size() * 4));
    run_backward(m_rt, b, params, nullptr);
    m_rt.synchronize(nullptr);
    result r{std::vector<uint16_t>(nq), std::vector<uint16_t>(nk), std::vector<uint16_t>(nv)};
    m_rt.copy_to_host(r.dq.data(), m_tensors.dq, int64_t(nq * 2));
    m_rt.copy_to_host(r.dk.data(), m_tensors.dk, int64_t(nk * 2));
    m_rt.copy_to_host(r.dv.data(), m_tensors.dv, int64_t(nv * 2));
    return r;
  }
  std::vector<double> widen(const std::vector<uint16_t>& bits) const {
    std::vector<double> out;
    for (uint16_t b : bits) out.push_back(elem_to_float(m_s.dtype, b));
    return out;
  }
  // "" when the three gradients pass; else what failed.
  std::string check(const result& r) const {
    std::string why;
    const std::tuple<const char*, const std::vector<double>*, const std::vector<uint16_t>*, double> grads[] = {
        {"dQ", &ref.dq, &r.dq, allowed_dq}, {"dK", &ref.dk, &r.dk, allowed_dk}, {"dV", &ref.dv, &r.dv, allowed_dv}};
    for (const auto& [what, want, got, allowed] : grads) {
      const double e = max_error(*want, widen(*got));
      if (!(e <= allowed)) why += fmt::format("{} error {:.3e} > allowed {:.3e}; ", what, e, allowed);
    }
    return why;
  }

  host_tensor q, k, v, d_o, o;
  std::vector<float> lse;
  gradients_fp64 ref;
  double allowed_dq = 0, allowed_dk = 0, allowed_dv = 0;
  attn_k::bwd_params params{};

 private:
  const device_runtime& m_rt;
  problem m_s;
  backward_tensors m_tensors;
  std::vector<void*> m_owned;
};

class backward_gpu : public gpu_test {
 public:
  using gpu_test::m_cache;
  using gpu_test::m_gpu;
  using gpu_test::rt;
  void SetUp() override {
    gpu_test::SetUp();
    if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "the backward runs on CUDA (mma.sync)";
  }
  loaded_backward build(const compile_cache& cache, const backward_config& c, const problem& s) {
    const cached_compile r = compile_with_cache(cache, backward_instantiation(c, s), m_gpu.desc.arch,
                                                backward_compile_options());
    if (!r.result.ok) throw std::runtime_error(name(c) + ": " + r.result.log);
    return load_backward(rt(), r.result.cubin, c, s, m_gpu.ordinal);
  }
};

// Every default variant of one family (wgmma: kernels/wgmma_bwd.cuh, else fa2_bwd.cuh) on every case.
void check_every_variant(backward_gpu& t, bool wgmma, int at_least);

TEST_F(backward_gpu, every_fa2_variant_matches_the_float64_gradients) { check_every_variant(*this, false, 30); }

TEST_F(backward_gpu, every_wgmma_variant_matches_the_float64_gradients) {
  if (m_gpu.desc.cc_major != 9) GTEST_SKIP() << "the wgmma backward runs on sm_90 only";
  check_every_variant(*this, true, 30);
}

TEST_F(backward_gpu, reruns_are_bit_identical) {
  const problem s = shape(2, 8, 2, 333, 517, 64, true);
  const backward_run run(rt(), s, 99);
  const loaded_backward b = build(m_cache, backward_config{}, s);
  const auto first = run.run(b), second = run.run(b);
  EXPECT_EQ(run.check(first), "");
  EXPECT_TRUE(first.dq == second.dq && first.dk == second.dk && first.dv == second.dv);
}

// ATTN_TUNE_BACKWARD_VARIANTS (a regex over variant names) narrows the check to those variants, for
// a short device session (the count floor then drops to 1).
void check_every_variant(backward_gpu& t, bool wgmma, int at_least) {
  const char* only = std::getenv("ATTN_TUNE_BACKWARD_VARIANTS");
  const std::regex keep(only ? only : "");
  if (only) at_least = 1;
  int checked = 0, seed = 1234;
  for (const backward_case& bc : cases()) {
    const backward_run run(t.rt(), bc.s, seed++);
    for (const backward_config& c : backward_default_configs(bc.s)) {
      if (c.wgmma != wgmma || backward_reject(c, bc.s, t.m_gpu.limits)) continue;
      if (only && !std::regex_search(name(c), keep)) continue;
      const loaded_backward b = t.build(t.m_cache, c, bc.s);
      const std::string why = run.check(run.run(b));
      EXPECT_EQ(why, "") << bc.what << " " << describe(bc.s) << " " << name(c);
      ++checked;
    }
  }
  EXPECT_GE(checked, at_least);
}

// The warp-specialized dK/dV kernel (a producer warpgroup, mbarriers; opt-in, not in the default
// configs) on every case it takes, two and three stages (first passed on an H100, 2026-12-07).
TEST_F(backward_gpu, warp_specialized_atomic_variants_match_the_float64_gradients) {
  if (m_gpu.desc.cc_major != 9) GTEST_SKIP() << "the wgmma backward runs on sm_90 only";
  int checked = 0, seed = 4321;
  for (const backward_case& bc : cases()) {
    const backward_run run(rt(), bc.s, seed++);
    for (const char* config : {"wg_kv_m64_n128_w12_s2-dq_atomic", "wg_kv_m64_n128_w12_s3-dq_atomic"}) {
      const backward_config c = parse_backward_config(config);
      if (backward_reject(c, bc.s, m_gpu.limits)) continue;
      const loaded_backward b = build(m_cache, c, bc.s);
      EXPECT_EQ(run.check(run.run(b)), "") << bc.what << " " << describe(bc.s) << " " << config;
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);  // the D 128 cases (two warpgroups of D / 2 atomic dQ columns each)
}

TEST_F(backward_gpu, planted_defects_come_out_wrong) {
  const problem s = shape(1, 4, 2, 150, 150, 64, true);
  const backward_run run(rt(), s, 7);
  for (const testing::backward_defect& d : testing::backward_defects()) {
    const backward_config c = parse_backward_config(d.config);
    if (backward_reject(c, s, m_gpu.limits)) continue;  // wgmma off sm_90
    const loaded_backward good = build(m_cache, c, s);
    ASSERT_EQ(run.check(run.run(good)), "") << d.config << ": the unplanted kernel must pass first";
    auto files = m_cache.kernels().files();
    bool found = false;
    for (auto& f : files)
      if (f.name == d.file && f.text.find(d.from) != std::string::npos)
        f.text.replace(f.text.find(d.from), std::string(d.from).size(), d.to), found = true;
    ASSERT_TRUE(found) << d.name << ": the anchor is gone from " << d.file;
    const temp_dir dir("attn-tune-backward-planted");
    const compile_cache planted(dir.path().string(), kernel_sources::from_files(files, "planted"));
    const loaded_backward b = build(planted, c, s);
    EXPECT_NE(run.check(run.run(b)), "") << d.name << " passed the check";
  }
}

}  // namespace
}  // namespace attn
