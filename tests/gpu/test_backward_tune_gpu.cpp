// The tool's backward path on the GPU (issue 22, items 2 and 3): the support module's gradient
// reference against the float64 gradients; tune() of pass bwd, which verifies every variant against
// that reference (outputs poisoned first) and times those that pass; planted defects coming out
// wrong through it; attn-bench's runner of a backward variant; and `attn-tune --pass fwdbwd`
// end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "core/numeric.hpp"
#include "../backward_defects.hpp"
#include "gpu_fixture.hpp"
#include "../cpu/temp_dir.hpp"
#include "report/csv.hpp"
#include "run/tuner.hpp"
#include "run/variant_runner.hpp"
#include "verify/cpu_gradients.hpp"
#include "verify/gpu_gradients.hpp"

namespace attn {
namespace {

using testing::gpu_test;

problem shape(int64_t b, int64_t h, int64_t hkv, int64_t nq, int64_t nkv, int64_t d, bool causal,
              dtype t = dtype::bf16, layout l = layout::bhsd) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hkv, s.q_len = nq, s.kv_len = nkv, s.head_dim = d, s.causal = causal;
  s.dtype = t, s.layout = l, s.pass = attention_pass::bwd;
  return s;
}

class backward_tune_gpu : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "the backward runs on CUDA";
  }
  std::vector<float> widened(const device_buffer& b, dtype t) {
    std::vector<float> out;
    for (uint16_t bits : to_host<uint16_t>(rt(), b)) out.push_back(elem_to_float(t, bits));
    return out;
  }
};

// The largest |a - b| over the largest |b|: the fp32 reference against float64.
double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
    if (std::isnan(a[i])) return INFINITY;
  }
  return worst / std::max(scale, 1e-30);
}

TEST_F(backward_tune_gpu, the_gradient_reference_is_the_float64_gradients) {
  problem window = shape(1, 2, 1, 120, 200, 64, false);
  window.window_left = 30, window.window_right = 10;
  problem capped = shape(1, 4, 2, 100, 170, 64, true), capped_fp16 = shape(2, 2, 1, 130, 67, 128, false, dtype::fp16);
  capped.softcap = 2.5, capped_fp16.softcap = 30;  // dS times 1 - tanh^2 (2.5: most scores bent)
  problem mla = shape(1, 4, 2, 90, 130, 192, true), narrow_v = shape(1, 2, 1, 70, 70, 128, false, dtype::fp16, layout::bshd);
  mla.head_dim_v = 128, narrow_v.head_dim_v = 64;  // V's own head dim
  problem packed = shape(3, 4, 2, 120, 150, 64, true);  // a packed batch, one sequence of no key
  packed.seqlens = "120/1/57", packed.kv_seqlens = "150/0/99";
  const problem cases[] = {shape(1, 4, 2, 100, 170, 64, true), shape(2, 2, 1, 130, 67, 128, false, dtype::fp16, layout::bshd),
                           shape(1, 2, 2, 77, 129, 96, true), shape(1, 2, 2, 1, 300, 64, false), window, capped, capped_fp16,
                           mla, narrow_v, packed};
  for (const problem& s : cases) {
    const auto support = load_support(rt(), m_cache, s.dtype, m_gpu.desc.arch);
    const device_problem pr(s, *support, 4242);
    const reference_outputs forward = compute_reference(*support, pr, int64_t(1) << 20);  // several chunks
    const backward_reference ref = compute_backward_reference(*support, pr, forward, 4242, int64_t(1) << 20);
    const gradients_fp64 want =
        attention_gradients_fp64(s, widened(pr.q, s.dtype), widened(pr.k, s.dtype), widened(pr.v, s.dtype),
                                 widened(ref.d_o, s.dtype));
    EXPECT_LT(relative_error(to_host<float>(rt(), ref.dq_full), want.dq), 1e-5) << describe(s);
    EXPECT_LT(relative_error(to_host<float>(rt(), ref.dk_full), want.dk), 1e-5) << describe(s);
    EXPECT_LT(relative_error(to_host<float>(rt(), ref.dv_full), want.dv), 1e-5) << describe(s);
    // The backward's inputs: O rounded to the input type, the LSE as the reference forward's.
    const std::vector<float> o = widened(pr.o, s.dtype);
    for (size_t i = 0; i < o.size(); i += 7)
      EXPECT_NEAR(o[i], want.o[i], 1e-2 * (1 + std::abs(want.o[i]))) << describe(s) << " O[" << i << "]";
    const std::vector<float> lse = to_host<float>(rt(), pr.lse);
    for (size_t i = 0; i < lse.size(); ++i) {
      if (std::isinf(want.lse[i]))  // a row that sees no key (a packed sequence of none)
        EXPECT_EQ(lse[i], want.lse[i]) << describe(s) << " lse[" << i << "]";
      else
        EXPECT_NEAR(lse[i], want.lse[i], 1e-4) << describe(s) << " lse[" << i << "]";
    }
    // The input type's own error: there, and small.
    for (double e : {ref.lowp_dq, ref.lowp_dk, ref.lowp_dv}) {
      EXPECT_GT(e, 0) << describe(s);
      EXPECT_LT(e, 0.5) << describe(s);
    }
  }
}

// Every default variant of both families on a small ragged GQA shape: all verified ok, one best.
// tune() of pass bwd over every default variant of both families (wgmma on sm_90 only, and only
// where it takes the problem): each one the pruner keeps verified ok and timed, at least two a
// family, one best.
void expect_every_variant_ok(const problem& s, const gpu_info& gpu, const compile_cache& cache, uint64_t seed) {
  for (const char* family : {"fa2", "wgmma"}) {
    if (std::string(family) == "wgmma" && gpu.desc.cc_major != 9) continue;
    tune_options o;
    o.family = family;
    o.seed = seed;
    o.timing.min_reps = o.timing.max_reps = 5;
    o.timing.min_total_ms = 0;
    const tune_result r = tune(s, gpu, cache, o);
    ASSERT_TRUE(r.best.has_value()) << family << ": " << r.pruning;
    int ok = 0;
    for (const record& rec : r.records) {
      EXPECT_EQ(rec.shape.pass, attention_pass::bwd);
      EXPECT_EQ(rec.family, family);
      if (rec.status == status::pruned) continue;
      EXPECT_EQ(rec.status, status::ok) << config_name(rec) << ": " << rec.message;
      ++ok;
      EXPECT_GT(rec.tflops, 0);
      EXPECT_LE(rec.max_error, rec.allowed_error) << config_name(rec);
    }
    EXPECT_GE(ok, 2) << family;
    EXPECT_GT(r.lowp_error, 0);
    EXPECT_EQ(r.records[*r.best].rank, 1);
  }
}

TEST_F(backward_tune_gpu, tuning_the_backward_verifies_and_times_every_variant) {
  expect_every_variant_ok(shape(2, 4, 2, 200, 333, 64, true), m_gpu, m_cache, 11);
}

// Softcap: the GPU reference's dS carries 1 - tanh^2, and so do both families' kernels.
TEST_F(backward_tune_gpu, tuning_a_softcap_backward_verifies_every_variant) {
  problem s = shape(1, 4, 2, 150, 190, 128, true);
  s.softcap = 5;
  expect_every_variant_ok(s, m_gpu, m_cache, 12);
}

// A packed variable-length batch: both families' variants (wgmma's atomic dQ sum [H, total_q, D]).
TEST_F(backward_tune_gpu, tuning_a_packed_batchs_backward_verifies_every_variant) {
  problem s = shape(3, 4, 2, 200, 230, 128, true, dtype::bf16, layout::bshd);
  s.seqlens = "200/13/150", s.kv_seqlens = "230/40/150";
  expect_every_variant_ok(s, m_gpu, m_cache, 14);
}

// V's own head dim (MLA's prefill, d 192 and dv 128): both families' variants.
TEST_F(backward_tune_gpu, tuning_a_backward_with_vs_own_head_dim_verifies_every_variant) {
  problem s = shape(1, 4, 2, 150, 190, 192, true);
  s.head_dim_v = 128;
  expect_every_variant_ok(s, m_gpu, m_cache, 13);
}

// --deterministic: each variant's check reruns it and wants the same bits; every variant the mode
// searches passes (their dQ has a pass of its own), and it searches no atomic-dQ variant.
TEST_F(backward_tune_gpu, deterministic_mode_passes_every_variant) {
  const problem s = shape(1, 8, 2, 257, 300, 128, true);
  for (const char* family : {"fa2", "wgmma"}) {
    if (std::string(family) == "wgmma" && m_gpu.desc.cc_major != 9) continue;
    tune_options o;
    o.family = family;
    o.deterministic = true;
    o.seed = 21;
    o.timing.min_reps = o.timing.max_reps = 3;
    o.timing.min_total_ms = 0;
    const tune_result r = tune(s, m_gpu, m_cache, o);
    ASSERT_TRUE(r.best.has_value()) << family;
    for (const record& rec : r.records) {
      EXPECT_TRUE(deterministic(rec.backward)) << config_name(rec);
      if (rec.status != status::pruned) EXPECT_EQ(rec.status, status::ok) << config_name(rec) << ": " << rec.message;
    }
  }
}

// Each planted defect's variant, tuned alone from the planted sources: wrong, naming a gradient.
TEST_F(backward_tune_gpu, planted_defects_come_out_wrong_through_the_tuner) {
  const problem s = shape(1, 4, 2, 150, 150, 64, true);
  for (const testing::backward_defect& d : testing::backward_defects()) {
    const backward_config c = parse_backward_config(d.config);
    if (backward_reject(c, s, m_gpu.limits)) continue;  // wgmma off sm_90
    auto files = m_cache.kernels().files();
    for (auto& f : files)
      if (f.name == d.file && f.text.find(d.from) != std::string::npos)
        f.text.replace(f.text.find(d.from), std::string(d.from).size(), d.to);
    const temp_dir dir("attn-tune-backward-tune-planted");
    const compile_cache planted(dir.path().string(), kernel_sources::from_files(files, "planted"));
    tune_options o;
    o.family = backward_family(c);
    o.backward_configs = {c};
    o.seed = 5;
    const tune_result r = tune(s, m_gpu, planted, o);
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].status, status::wrong) << d.name << ": " << r.records[0].message;
    const std::string& why = r.records[0].message;
    EXPECT_TRUE(why.find("dQ") != std::string::npos || why.find("dK") != std::string::npos ||
                why.find("dV") != std::string::npos)
        << d.name << ": " << why;
    EXPECT_FALSE(r.best.has_value()) << d.name;
  }
}

TEST_F(backward_tune_gpu, attn_bench_runs_a_tuned_backward_variant) {
  const problem s = shape(1, 8, 2, 512, 512, 128, true);
  record tuned;
  tuned.shape = s;
  tuned.family = "fa2";
  set_backward_config(tuned, parse_backward_config("kv_m32_n64_w4_s2-q_m64_n64_w4_s2"));
  variant_runner runner(tuned, m_gpu, m_cache, 3);
  EXPECT_EQ(runner.verified().status, status::ok) << runner.verified().message;
  for (int i = 0; i < 3; ++i) EXPECT_GT(runner.time_once(), 0);
}

TEST_F(backward_tune_gpu, the_command_line_tunes_fwdbwd_and_reports_the_sum) {
  const temp_dir dir("attn-tune-fwdbwd");
  const std::string out = (dir.path() / "r.csv").string(), log = (dir.path() / "log.txt").string();
  const std::string command = fmt::format(
      "{} --pass fwdbwd --shape 1,4,256,64 --kv-heads 2 --causal --family fa2 --space block_m=64 block_n=64 warps=4 "
      "stages=2 --no-db --seed 3 --min-reps 5 --max-reps 10 --out {} > {} 2>&1",
      ATTN_TUNE_BINARY, out, log);
  ASSERT_EQ(testing::exit_status_of(command), 0) << testing::text_of(log);
  const std::string text = testing::text_of(log);
  EXPECT_NE(text.find("fwd + bwd:"), std::string::npos) << text;
  EXPECT_NE(text.find("best (bwd):"), std::string::npos) << text;
  const auto rows = read_csv(out);
  const auto of = [&](attention_pass p) {
    return std::count_if(rows.begin(), rows.end(), [&](const record& r) { return r.shape.pass == p && r.status == status::ok; });
  };
  EXPECT_EQ(of(attention_pass::fwd), 1);
  EXPECT_GE(of(attention_pass::bwd), 1);
}

}  // namespace
}  // namespace attn
