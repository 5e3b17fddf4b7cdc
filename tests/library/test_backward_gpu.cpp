// attn_tune_backward on a GPU (label gpu; skips without one): the library's plumbing of the
// backward (which variant, which tensors, which grids) against float64 gradients of the same
// inputs, with GQA, causal masks, cross-attention, both layouts and fp16; bit-identical reruns;
// what it refuses. The kernels themselves are held to FlashAttention's rule per variant by
// tests/gpu/test_backward_gpu.cpp; here a plumbing error (a wrong tensor, grid or stride) would be
// an error of the gradients' own size, so 2% of the largest gradient is the bound.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "library_gpu_fixture.hpp"
#include "reference.hpp"  // examples/cpp

namespace {

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
};

struct grads {
  std::vector<double> dq, dk, dv, o, lse;
};

// The float64 gradients (and O, LSE) of attention over contiguous tensors of p's layout; softcap C
// caps each scaled score to C tanh(score / C), and dS carries 1 - tanh^2. A packed batch (`packed`:
// its offsets): each sequence its own lengths and rows, the LSE [H, total_q].
grads gradients_fp64(const attn_tune_problem& p, const std::vector<float>& q, const std::vector<float>& k,
                     const std::vector<float>& v, const std::vector<float>& d_o, const example::packed_batch& packed) {
  const int64_t D = p.head_dim, DV = p.head_dim_v > 0 ? p.head_dim_v : D, group = p.heads / p.kv_heads;
  const double scale = 1.0 / std::sqrt(double(D)), cap = p.softcap;
  const int64_t rows = packed.cu_q.empty() ? p.batch * p.q_len : packed.cu_q.back();
  grads g{std::vector<double>(q.size()), std::vector<double>(k.size()), std::vector<double>(v.size()),
          std::vector<double>(d_o.size()), std::vector<double>(rows * p.heads, -INFINITY)};
  const auto& cu_q = packed.cu_q;
  const auto& cu_k = packed.cu_k;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < example::q_count(p, packed, b); ++i) {
        const example::key_range keys =
            example::visible_keys(p, i, example::q_count(p, packed, b), example::kv_count(p, packed, b));
        if (keys.first > keys.last) continue;
        const int64_t qi = example::offset(p, false, b, h, i, 0, cu_q), oi = example::offset(p, false, b, h, i, DV, cu_q);
        const int64_t lse_at = cu_q.empty() ? (b * p.heads + h) * p.q_len + i : h * rows + cu_q[size_t(b)] + i;
        std::vector<double> s(static_cast<size_t>(keys.last - keys.first + 1)), dtanh(s.size(), 1.0);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const int64_t kj = example::offset(p, true, b, h / group, j, 0, cu_k);
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += double(q[qi + d]) * k[kj + d];
          double score = dot * scale;
          if (cap > 0) {
            const double t = std::tanh(score / cap);
            score = cap * t, dtanh[j - keys.first] = 1 - t * t;
          }
          mx = std::max(mx, s[j - keys.first] = score);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        g.lse[size_t(lse_at)] = mx + std::log(sum);
        std::vector<double> dp(s.size());
        double delta = 0;
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const int64_t vj = example::offset(p, true, b, h / group, j, DV, cu_k);
          double& pj = s[j - keys.first];
          pj /= sum;
          double dot = 0;
          for (int64_t d = 0; d < DV; ++d) dot += double(d_o[oi + d]) * v[vj + d], g.o[oi + d] += pj * v[vj + d];
          delta += pj * (dp[j - keys.first] = dot);
        }
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const int64_t kj = example::offset(p, true, b, h / group, j, 0, cu_k),
                        vj = example::offset(p, true, b, h / group, j, DV, cu_k);
          const double pj = s[j - keys.first], ds = pj * (dp[j - keys.first] - delta) * dtanh[j - keys.first];
          for (int64_t d = 0; d < D; ++d) {
            g.dq[qi + d] += scale * ds * k[kj + d];
            g.dk[kj + d] += scale * ds * q[qi + d];
          }
          for (int64_t d = 0; d < DV; ++d) g.dv[vj + d] += pj * d_o[oi + d];
        }
      }
  return g;
}

class LibraryBackward : public library_gpu_test {
 protected:
  // Uploads random q, k, v, dO and the float64 O and LSE (O rounded), runs the backward, and
  // returns each gradient's largest error over its largest magnitude.
  struct outcome {
    double dq = INFINITY, dk = INFINITY, dv = INFINITY;
    std::vector<uint16_t> bits;  ///< dq, dk, dv as the kernels wrote them, for reruns
    attn_tune::choice ran{};
  };
  // `packed`: a packed batch's offsets (the problem's cu_seqlens and totals are set from them).
  outcome run(const attn_tune_problem& given, uint32_t seed, const example::packed_batch& packed = {}) {
    attn_tune_problem p = given;
    const bool bf16 = p.dtype == ATTN_TUNE_BF16;
    const int64_t q_rows = packed.cu_q.empty() ? p.batch * p.q_len : packed.cu_q.back(),
                  kv_rows = packed.cu_k.empty() ? p.batch * p.kv_len : packed.cu_k.back();
    const size_t nq = q_rows * p.heads * p.head_dim, nk = kv_rows * p.kv_heads * p.head_dim;
    const int64_t dv = p.head_dim_v > 0 ? p.head_dim_v : p.head_dim;  // V's head dim
    const size_t no = nq / p.head_dim * dv, nv = nk / p.head_dim * dv;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    auto make = [&](size_t n) {
      std::vector<float> x(n);
      for (auto& e : x) e = example::round_to(normal(rng), bf16);
      return x;
    };
    const auto q = make(nq), k = make(nk), v = make(nv), d_o = make(no);
    const grads want = gradients_fp64(p, q, k, v, d_o, packed);
    std::vector<float> o(no), lse(want.lse.begin(), want.lse.end());
    for (size_t i = 0; i < no; ++i) o[i] = example::round_to(static_cast<float>(want.o[i]), bf16);
    device_buffer dq_(nq * 2), dk_(nk * 2), dv_(nv * 2), q_(nq * 2), k_(nk * 2), v_(nv * 2), o_(no * 2), do_(no * 2),
        lse_(lse.size() * 4), delta_(lse.size() * 4), cu_q_(packed.cu_q.size() * 4 + 4), cu_k_(packed.cu_k.size() * 4 + 4);
    if (!packed.cu_q.empty()) {  // the offsets on the device, as int32
      const std::vector<int32_t> cq(packed.cu_q.begin(), packed.cu_q.end()), ck(packed.cu_k.begin(), packed.cu_k.end());
      EXPECT_EQ(cudaMemcpy(cu_q_.p, cq.data(), cq.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(cu_k_.p, ck.data(), ck.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      p.cu_seqlens_q = static_cast<const int32_t*>(cu_q_.p), p.cu_seqlens_k = static_cast<const int32_t*>(cu_k_.p);
      p.total_q = q_rows, p.total_k = kv_rows;
    }
    auto upload = [&](const std::vector<float>& host, device_buffer& dev) {
      std::vector<uint16_t> bits(host.size());
      for (size_t i = 0; i < host.size(); ++i) bits[i] = example::to_bits(host[i], bf16);
      EXPECT_EQ(cudaMemcpy(dev.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    };
    upload(q, q_), upload(k, k_), upload(v, v_), upload(o, o_), upload(d_o, do_);
    EXPECT_EQ(cudaMemcpy(lse_.p, lse.data(), lse.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    for (device_buffer* b : {&dq_, &dk_, &dv_}) cudaMemset(b->p, 0xff, b == &dq_ ? nq * 2 : b == &dk_ ? nk * 2 : nv * 2);  // NaN
    outcome out;
    out.ran = m_ctx->backward(q_.p, k_.p, v_.p, o_.p, static_cast<const float*>(lse_.p), do_.p, dq_.p, dk_.p, dv_.p,
                              static_cast<float*>(delta_.p), p);
    m_ctx->synchronize();
    auto relative = [&](device_buffer& dev, const std::vector<double>& ref) {
      std::vector<uint16_t> bits(ref.size());
      EXPECT_EQ(cudaMemcpy(bits.data(), dev.p, bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      out.bits.insert(out.bits.end(), bits.begin(), bits.end());
      double worst = 0, scale = 1e-30;
      for (size_t i = 0; i < ref.size(); ++i) {
        const double got = example::from_bits(bits[i], bf16);
        if (std::isnan(got)) return double(INFINITY);
        worst = std::max(worst, std::abs(got - ref[i]));
        scale = std::max(scale, std::abs(ref[i]));
      }
      return worst / scale;
    };
    out.dq = relative(dq_, want.dq), out.dk = relative(dk_, want.dk), out.dv = relative(dv_, want.dv);
    return out;
  }
  void expect_passes(const attn_tune_problem& p, uint32_t seed, const example::packed_batch& packed = {}) {
    const outcome r = run(p, seed, packed);
    EXPECT_LT(r.dq, 0.02) << r.ran.variant;
    EXPECT_LT(r.dk, 0.02) << r.ran.variant;
    EXPECT_LT(r.dv, 0.02) << r.ran.variant;
  }
};

TEST_F(LibraryBackward, GradientsOfGqaCausalCrossAttentionInBothLayoutsAndDtypes) {
  auto p = attn_tune::make_problem(2, 4, 2, 130, 200, 64);
  p.causal = 1;
  expect_passes(p, 1);
  p.layout = ATTN_TUNE_BSHD;
  p.dtype = ATTN_TUNE_FP16;
  expect_passes(p, 2);
  auto wide = attn_tune::make_problem(1, 2, 1, 97, 64, 128);  // MQA, more queries than keys
  wide.causal = 1;
  expect_passes(wide, 3);
  expect_passes(attn_tune::make_problem(1, 2, 2, 70, 90, 256), 4);  // the fallback's split dK/dV
}

TEST_F(LibraryBackward, GradientsWithSoftcap) {
  auto p = attn_tune::make_problem(2, 4, 2, 130, 200, 64);
  p.causal = 1;
  p.softcap = 2.5f;  // small enough that tanh bends most scores (unit normal inputs: |score| up to ~4)
  expect_passes(p, 21);
  auto wide = attn_tune::make_problem(1, 2, 1, 97, 64, 256);  // the fallback's split dK/dV
  wide.softcap = 30;
  expect_passes(wide, 22);
}

// A packed batch (flash_attn_varlen_func's backward): fa2's variants, each sequence its own lengths.
TEST_F(LibraryBackward, GradientsOfAPackedBatch) {
  auto p = attn_tune::make_problem(3, 4, 2, 150, 170, 64);  // q_len, kv_len: the longest sequence's
  p.causal = 1;
  const example::packed_batch packed{{0, 150, 151, 221}, {0, 170, 171, 171}};  // a sequence of no key
  for (uint32_t seed : {41u, 42u}) {
    const outcome r = run(p, seed, packed);
    EXPECT_LT(r.dq, 0.02) << r.ran.variant;
    EXPECT_LT(r.dk, 0.02) << r.ran.variant;
    EXPECT_LT(r.dv, 0.02) << r.ran.variant;
    EXPECT_EQ(std::string(r.ran.family), "fa2");
  }
  auto bshd = attn_tune::make_problem(2, 2, 2, 90, 90, 128);  // self-attention, bshd
  bshd.layout = ATTN_TUNE_BSHD;
  bshd.head_dim_v = 64;
  expect_passes(bshd, 43, {{0, 90, 127}, {0, 90, 127}});
}

TEST_F(LibraryBackward, GradientsWithVsOwnHeadDim) {
  auto mla = attn_tune::make_problem(1, 4, 2, 130, 150, 192);  // MLA's prefill: d 192, dv 128
  mla.head_dim_v = 128;
  mla.causal = 1;
  expect_passes(mla, 31);
  auto narrow = attn_tune::make_problem(2, 2, 1, 70, 90, 128);
  narrow.head_dim_v = 64;
  narrow.layout = ATTN_TUNE_BSHD;
  expect_passes(narrow, 32);
}

TEST_F(LibraryBackward, SaysWhichVariantRanAndRerunsAreBitIdentical) {
  auto p = attn_tune::make_problem(1, 8, 2, 300, 300, 128);
  p.causal = 1;
  const outcome a = run(p, 9), b = run(p, 9);
  EXPECT_EQ(std::string(a.ran.variant), "kv_m32_n64_w4_s2-q_m64_n64_w4_s2");  // no table: the fallback
  EXPECT_EQ(a.ran.source, ATTN_TUNE_SOURCE_FALLBACK);
  EXPECT_EQ(std::string(a.ran.family), "fa2");
  EXPECT_TRUE(a.bits == b.bits);
}

// A table whose bucket names an atomic-dQ variant (sm_90 only): the library gives it its fp32
// workspace, and its gradients pass; a second call (the plan looked up) too.
TEST_F(LibraryBackward, RunsTheAtomicDqVariantATableNames) {
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major != 9) GTEST_SKIP() << "the wgmma backward runs on sm_90 only";
  const std::string path = std::string(ATTN_TUNE_BINARY_DIR) + "/backward-atomic-table.csv";
  {
    std::ofstream out(path);
    out << "device,cc,sm_count,dtype,head_dim,causal,pass,seq_min_exclusive,seq_max,family,block_m,block_n,warps,"
           "stages,tflops,tuned_shapes,variant\n"
        << '"' << prop.name << "\"," << prop.major << '.' << prop.minor << ',' << prop.multiProcessorCount
        << ",bf16,128,1,bwd,0,100000,wgmma,64,128,8,2,1.0,1,wg_kv_m64_n128_w8_s2-dq_atomic\n";
  }
  attn_tune::context_options o;
  o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
  o.table = path;
  m_ctx.emplace(o);
  auto p = attn_tune::make_problem(2, 4, 2, 300, 333, 128);
  p.causal = 1;
  for (uint32_t seed : {11u, 12u}) {
    const outcome r = run(p, seed);
    EXPECT_EQ(std::string(r.ran.variant), "wg_kv_m64_n128_w8_s2-dq_atomic");
    EXPECT_EQ(std::string(r.ran.family), "wgmma");
    EXPECT_LT(r.dq, 0.02);
    EXPECT_LT(r.dk, 0.02);
    EXPECT_LT(r.dv, 0.02);
  }
}

TEST_F(LibraryBackward, RefusesWhatItDoesNotTakeNamingIt) {
  auto p = attn_tune::make_problem(1, 2, 2, 64, 64, 64);
  device_buffer buf(1 << 20);
  auto call = [&](const attn_tune_problem& q) {
    return attn_tune_backward(m_ctx->get(), buf.p, buf.p, buf.p, buf.p, static_cast<float*>(buf.p), buf.p, buf.p,
                              buf.p, buf.p, static_cast<float*>(buf.p), &q, nullptr, nullptr);
  };
  auto paged = p;  // a K/V cache: not in the backward yet
  paged.cache_seqlens = static_cast<const int32_t*>(buf.p);
  EXPECT_EQ(call(paged), ATTN_TUNE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(attn_tune_last_error()).find("kv_lens"), std::string::npos) << attn_tune_last_error();
  auto strided = p;
  strided.q_strides[0] = 64 * 64 * 4, strided.q_strides[1] = 64 * 64, strided.q_strides[2] = 128;  // rows padded
  EXPECT_EQ(call(strided), ATTN_TUNE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(attn_tune_last_error()).find("q_strides"), std::string::npos) << attn_tune_last_error();
  EXPECT_EQ(attn_tune_backward(m_ctx->get(), buf.p, buf.p, buf.p, buf.p, static_cast<float*>(buf.p), buf.p, nullptr,
                               buf.p, buf.p, static_cast<float*>(buf.p), &p, nullptr, nullptr),
            ATTN_TUNE_ERROR_INVALID_ARGUMENT);
}

}  // namespace
