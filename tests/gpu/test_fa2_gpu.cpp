// Every variant of a small space of the device's family (fa2 on CUDA, mfma on HIP) must pass the
// reference check on shapes that cover causal and not, ragged N, GQA, cross-attention, D 32 to
// 256 (for wgmma: each of its swizzle widths), both dtypes and both layouts, each on every kind of
// --inputs (normal; wide, where the online softmax's rescale runs; sink, with logits of 20-40).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "../planted_defects.hpp"
#include "cli/option_checks.hpp"
#include "gpu_fixture.hpp"
#include "codegen/family_hopper.hpp"
#include "report/csv.hpp"
#include "run/tuner.hpp"

namespace attn::testing {
namespace {

struct fa2_case {
  const char* label;
  problem s;
};

problem make(int64_t b, int64_t h, int64_t hk, int64_t n, int64_t nk, int64_t d, bool causal,
           dtype t, layout l) {
  problem s;
  s.batch = b, s.heads = h, s.kv_heads = hk, s.q_len = n, s.kv_len = nk, s.head_dim = d;
  s.causal = causal, s.dtype = t, s.layout = l;
  return s;
}

void PrintTo(const fa2_case& c, std::ostream* os) { *os << c.label << ": " << describe(c.s); }

// Both pipelines (1 stage and a ring), one and two 16-row tiles per warp, narrow and wide N.
search_space test_space(const std::string& family, int64_t head_dim) {
  if (family == "mfma")  // 64 KiB of LDS: D=256 fits 32-row blocks with 16- or 32-key tiles only
    return head_dim == 256 ? parse_space({"block_m=32", "block_n=16,32", "warps=2", "stages=1,2"})
                           : parse_space({"block_m=32,64", "block_n=32,64", "warps=2", "stages=1,2"});
  if (head_dim == 256) return parse_space({"block_m=64,128", "block_n=32,64", "warps=4,8", "stages=1,2"});
  return parse_space({"block_m=64,128", "block_n=32,64", "warps=4", "stages=1,2"});
}

using correctness_case = std::tuple<fa2_case, input_kind>;

class fa2_correctness : public gpu_test, public ::testing::WithParamInterface<correctness_case> {
 protected:
  const problem& problem_shape() const { return std::get<0>(GetParam()).s; }
  input_kind inputs() const { return std::get<1>(GetParam()); }
};

// Verifies every variant of `space` of `family` on s; at least two must be ok.
void expect_every_variant_passes(const problem& s, const gpu_info& gpu, const compile_cache& cache,
                                 const std::string& family, const search_space& space,
                                 input_kind inputs = input_kind::normal) {
  tune_options t;
  t.family = family;
  t.space = space;
  t.seed = 42;
  t.inputs = inputs;
  t.timing.min_reps = 2;
  t.timing.max_reps = 2;
  t.timing.min_total_ms = 0;
  const tune_result r = tune(s, gpu, cache, t);
  int ok = 0;
  for (const auto& rec : r.records) {
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.status, status::ok) << family << " " << name(rec.config) << ": " << to_string(rec.status) << " "
                                      << rec.message;
    ok += rec.status == status::ok;
    if (rec.status == status::ok) EXPECT_LE(rec.max_error, r.allowed_error);
    if (rec.status == status::ok) EXPECT_EQ(rec.bound, r.bound);
  }
  EXPECT_GE(ok, 2) << family << " " << describe(s);
  std::printf("%s %s, %s inputs: naive error %.3e, rounding error %.3e, allowed %.3e (%s bound)\n", family.c_str(),
              describe(s).c_str(), to_string(inputs).c_str(), r.lowp_error, r.rounding_error, r.allowed_error,
              r.bound.c_str());
  ASSERT_TRUE(r.best.has_value());
}

TEST_P(fa2_correctness, every_variant_passes) {
  expect_every_variant_passes(problem_shape(), m_gpu, m_cache, m_family, test_space(m_family, problem_shape().head_dim),
                              inputs());
}

// On a Hopper GPU the wgmma family too: both schedules (every warp loading; a producer
// warpgroup), one- to three-stage rings, 64/80-key tiles.
TEST_P(fa2_correctness, every_wgmma_variant_passes_on_hopper) {
  if (m_gpu.backend != backend::cuda || !runs_on(wgmma_family(), m_gpu.desc.cc_major, m_gpu.desc.cc_minor))
    GTEST_SKIP() << "wgmma runs on sm_90 (Hopper) only; this is " << m_gpu.desc.arch;
  expect_every_variant_passes(
      problem_shape(), m_gpu, m_cache, "wgmma",
      parse_space({"block_m=64,128", "block_n=64,80", "warps=4,8,12", "stages=1,2,3"}), inputs());
}

// On a Hopper GPU the hopper family too: two and three computing warpgroups, 64/80/128-key tiles
// (80: not a power of two), every schedule bit (overlap, ping-pong, persistent grid, two Q tiles,
// the half-width last tile where it can act: 128-key tiles; 0 is the plain in-order loop, one
// block per tile; 128, trimmed warpgroups, where a causal mask gives a warpgroup tiles to skip).
TEST_P(fa2_correctness, every_hopper_variant_passes_on_hopper) {
  if (m_gpu.backend != backend::cuda || !runs_on(hopper_family(), m_gpu.desc.cc_major, m_gpu.desc.cc_minor))
    GTEST_SKIP() << "hopper runs on sm_90 (Hopper) only; this is " << m_gpu.desc.arch;
  expect_every_variant_passes(
      problem_shape(), m_gpu, m_cache, "hopper",
      parse_space({"block_m=128,192", "block_n=64,80,128", "warps=12,16", "stages=2",
                   "schedule=0,1,3,4,7,15,16,23,31,128,131,135,151"},
                  hopper_family().default_space),
      inputs());
}

const dtype bf = dtype::bf16, fp = dtype::fp16;
const layout bhsd = layout::bhsd, bshd = layout::bshd;

// Every shape on normal inputs; wide and sink inputs (the rescale and very large logits) on the
// shapes that cover the masks and the layouts (causal, ragged, GQA, cross-attention, D=256), which
// keeps the suite's time on the H200 near what it was.
const auto all_shapes = ::testing::Values(fa2_case{"plain_d64", make(2, 4, 4, 256, 256, 64, false, bf, bhsd)},
                      fa2_case{"causal_d128", make(1, 4, 4, 512, 512, 128, true, bf, bhsd)},
                      fa2_case{"ragged_causal", make(2, 3, 3, 301, 301, 64, true, fp, bhsd)},
                      fa2_case{"ragged_noncausal_bshd", make(1, 4, 4, 157, 157, 128, false, bf, bshd)},
                      fa2_case{"gqa", make(2, 8, 2, 200, 200, 128, true, fp, bshd)},
                      fa2_case{"mqa", make(1, 6, 1, 128, 128, 64, false, bf, bhsd)},
                      fa2_case{"cross_longer_kv", make(1, 4, 2, 130, 517, 64, true, bf, bhsd)},
                      fa2_case{"cross_shorter_kv", make(1, 2, 2, 300, 70, 128, true, fp, bhsd)},
                      fa2_case{"d256", make(1, 2, 2, 250, 250, 256, true, bf, bshd)},
                      fa2_case{"d256_fp16", make(1, 2, 1, 128, 192, 256, false, fp, bhsd)},
                      fa2_case{"d96", make(1, 2, 2, 100, 100, 96, false, bf, bhsd)},
                      fa2_case{"d32_causal_ragged", make(2, 2, 2, 77, 77, 32, true, fp, bhsd)},
                      // wgmma's 32-byte swizzle (D not a multiple of 32) and a 64-byte one of 5 pieces.
                      fa2_case{"d80_causal", make(1, 3, 3, 150, 150, 80, true, bf, bhsd)},
                      fa2_case{"d160_fp16", make(1, 2, 2, 140, 140, 160, false, fp, bshd)},
                      // One query row (decoding) against many keys, and many rows against one key
                      // (causal: all but the last row see no key: zeros, LSE -inf).
                      fa2_case{"one_query_gqa", make(2, 4, 2, 1, 300, 128, true, bf, bshd)},
                      fa2_case{"one_key_causal", make(1, 3, 3, 77, 1, 64, true, fp, bhsd)});
const auto large_logit_shapes = ::testing::Values(
    fa2_case{"ragged_causal", make(2, 3, 3, 301, 301, 64, true, fp, bhsd)},
    fa2_case{"gqa", make(2, 8, 2, 200, 200, 128, true, fp, bshd)},
    fa2_case{"cross_longer_kv", make(1, 4, 2, 130, 517, 64, true, bf, bhsd)},
    fa2_case{"d256", make(1, 2, 2, 250, 250, 256, true, bf, bshd)});
std::string case_name(const ::testing::TestParamInfo<correctness_case>& info) {
  return std::string(std::get<0>(info.param).label) + "_" + to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(shapes, fa2_correctness,
                         ::testing::Combine(all_shapes, ::testing::Values(input_kind::normal)), case_name);
INSTANTIATE_TEST_SUITE_P(large_logits, fa2_correctness,
                         ::testing::Combine(large_logit_shapes, ::testing::Values(input_kind::wide, input_kind::sink)),
                         case_name);

}  // namespace
}  // namespace attn::testing

namespace attn::testing {
namespace {

TEST_F(gpu_test, shape_too_large_for_device_memory_is_refused_before_allocating) {
  problem s;
  s.batch = 64, s.heads = 64, s.kv_heads = 64, s.q_len = s.kv_len = 65536, s.head_dim = 128;
  tune_options t;
  t.family = m_family;
  t.space = parse_space({"block_m=128", "block_n=64", "warps=4", "stages=2"});
  try {
    tune(s, m_gpu, m_cache, t);
    FAIL() << "a 64 x 64 x 65536 x 128 problem (68 GiB per tensor) was accepted";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("GiB of device memory"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(rt().synchronize_device());
}

// The persistent grid on a device that claims 7 SMs: each block walks many tiles, 7 not dividing
// their number, so K/V ring rounds and Q/O hand-overs continue across tiles and the last round is
// ragged. Causal (longest first) and not, GQA, O in its own tile (D=128 n64) and staged in Q's
// (D=128 n176, D=256 n80), one and two Q tiles (two alternate from tile to tile), a ragged N and
// heads_per_section cutting the heads unevenly.
TEST_F(gpu_test, hopper_persistent_schedule_walks_every_tile) {
  if (m_gpu.backend != backend::cuda || !runs_on(hopper_family(), m_gpu.desc.cc_major, m_gpu.desc.cc_minor))
    GTEST_SKIP() << "hopper runs on sm_90 (Hopper) only; this is " << m_gpu.desc.arch;
  gpu_info few_sms = m_gpu;
  few_sms.desc.sm_count = 7;
  few_sms.l2_bytes = 3 << 20;  // sections of a few heads
  for (const problem& s : {make(3, 5, 5, 1000, 1000, 128, true, bf, bhsd), make(2, 6, 2, 900, 900, 128, false, fp, bshd),
                         make(2, 5, 5, 640, 640, 256, true, bf, bhsd)}) {
    const int tiles = schedule_for(s, 128, few_sms.l2_bytes, 7, true).tiles;
    ASSERT_NE(tiles % 7, 0) << describe(s);
    ASSERT_GT(tiles, 7 * 3) << describe(s);
    SCOPED_TRACE(describe(s));
    expect_every_variant_passes(s, few_sms, m_cache, "hopper",
                                parse_space({"block_m=128", "block_n=64,80,128,176", "warps=12", "stages=2",
                                             "schedule=5,7,13,23,135,151"},
                                            hopper_family().default_space));
  }
}

}  // namespace
}  // namespace attn::testing

namespace attn::testing {
namespace {

// The built-in kernels, written to a fresh directory `name` under the temporary one with `line`
// planted at the top of fa2's kernel (for --kernels-dir).
std::filesystem::path planted_kernels(const std::string& name, const std::string& line) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  const kernel_sources embedded = kernel_sources::embedded();  // the files() it lends must outlive the loop
  for (auto f : embedded.files()) {
    if (f.name == "fa2.cuh") {
      const std::string anchor = "  extern __shared__ __align__(128) unsigned char shared_raw[];\n";
      const auto at = f.text.find(anchor);
      EXPECT_NE(at, std::string::npos) << "fa2.cuh changed: plant the line elsewhere";
      if (at != std::string::npos) f.text.insert(at + anchor.size(), line + "\n");
    }
    std::filesystem::create_directories((dir / f.name).parent_path());
    std::ofstream(dir / f.name) << f.text;
  }
  return dir;
}

TEST_F(gpu_test, a_variant_that_kills_the_context_does_not_end_the_run) {
  // Plant a trap in every variant with BLOCK_N = 32: its launch fails and the CUDA context is
  // lost. attn-tune must still verify and time the other variants (in a fresh process when the
  // device cannot be reset in this one) and choose among them.
  if (m_gpu.backend == backend::hip)
    GTEST_SKIP() << "on ROCm a GPU fault normally aborts the whole process (the HSA runtime's default), so the "
                    "in-process recovery this tests does not apply; isolating variants in child processes on HIP "
                    "is not implemented";
  const auto dir = planted_kernels("attn-tune-trap-kernels", "  if (C::BLOCK_N == 32) asm volatile(\"trap;\");");
  const auto csv = std::filesystem::temp_directory_path() / "attn-tune-trap.csv";
  std::filesystem::remove(csv);
  const std::string command = std::string(ATTN_TUNE_BINARY) +
                              " --shape 1,4,256,64 --family fa2 --space block_m=64 block_n=32,64 warps=4 stages=1,2 --seed 5"
                              " --min-reps 2 --max-reps 2 --min-time-ms 0 --no-db --kernels-dir " + dir.string() +
                              " --out " + csv.string() + " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const auto rows = read_csv(csv.string());
  ASSERT_EQ(rows.size(), 4u);
  int ok = 0;
  for (const auto& rec : rows) {
    if (rec.config.block_n == 32) {
      EXPECT_EQ(rec.status, status::launch_error) << name(rec.config) << ": " << rec.message;
      EXPECT_NE(rec.message.find("context was lost"), std::string::npos) << rec.message;
    } else {
      EXPECT_EQ(rec.status, status::ok) << name(rec.config) << ": " << rec.message;
      ok += rec.status == status::ok;
      if (rec.status == status::ok) EXPECT_GT(rec.rank, 0);
    }
  }
  EXPECT_EQ(ok, 2);
  std::filesystem::remove_all(dir);
}

TEST_F(gpu_test, a_variant_that_hangs_ends_the_run_and_keeps_what_was_measured) {
  // Plant an endless loop in every variant with BLOCK_N = 64, which run after the BLOCK_N = 32 ones.
  // The hang is in a child attn-tune: it exits, and with it the hung kernel, so this process's
  // GPU is free again afterwards.
  if (m_gpu.backend == backend::hip) GTEST_SKIP() << "the planted hang is in fa2, a CUDA family";
  const auto dir = planted_kernels("attn-tune-hang-kernels",
                                   "  if (C::BLOCK_N == 64) for (;;) asm volatile(\"nanosleep.u32 1000;\");");
  const auto csv = std::filesystem::temp_directory_path() / "attn-tune-hang.csv";
  std::filesystem::remove(csv);
  const std::string command = std::string(ATTN_TUNE_BINARY) +
                              " --shape 1,4,256,64 --family fa2 --space block_m=64 block_n=32,64 warps=4 stages=1,2 --seed 5"
                              " --min-reps 2 --max-reps 2 --min-time-ms 0 --kernel-timeout-s 2 --no-db --kernels-dir " +
                              dir.string() + " --out " + csv.string() + " > /dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int rc = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << command;
  EXPECT_EQ(WEXITSTATUS(rc), 6) << command;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60);
  const auto rows = read_csv(csv.string());
  ASSERT_EQ(rows.size(), 4u);  // enumeration order: n32_s1, n32_s2, n64_s1 (hangs), n64_s2
  // Every variant is verified before any is timed, so the two verified before the hang were not
  // timed: the hung kernel keeps the device busy.
  for (int i : {0, 1}) {
    EXPECT_EQ(rows[i].status, status::launch_error) << name(rows[i].config) << ": " << rows[i].message;
    EXPECT_EQ(rows[i].message, "not timed: an earlier variant hung");
  }
  EXPECT_EQ(rows[2].status, status::launch_error);
  EXPECT_NE(rows[2].message.find("hung: not finished after 2 s"), std::string::npos) << rows[2].message;
  EXPECT_EQ(rows[3].status, status::launch_error);
  EXPECT_EQ(rows[3].message, "not run: an earlier variant hung");
  EXPECT_NO_THROW(rt().synchronize_device());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attn::testing

namespace attn::testing {
namespace {

// The verifier rejects wrong kernels: each planted defect (tests/planted_defects.hpp) must come
// out `wrong` in every variant, on the inputs it names (the skipped rescale on wide ones), which
// also shows the per-variant poisoning works (a row never written stays NaN). Not run in CI (no
// GPU there).
TEST_F(gpu_test, planted_defects_come_out_wrong) {
  if (m_gpu.backend == backend::hip) GTEST_SKIP() << "the defects are planted in fa2 and hopper, CUDA families";
  const auto parent = std::filesystem::temp_directory_path() / ("attn-tune-defects-" + std::to_string(::getpid()));
  const bool hopper = runs_on(hopper_family(), m_gpu.desc.cc_major, m_gpu.desc.cc_minor);
  for (const auto& defect : planted_defects()) {
    SCOPED_TRACE(defect.name);
    const bool on_hopper = std::string(defect.family) == "hopper";
    if (on_hopper && !hopper) continue;  // sm_90 only
    const auto dir = plant(defect, parent);
    ASSERT_FALSE(dir.empty()) << "anchor not found in kernels/" << defect.file;
    const auto csv = parent / (std::string(defect.name) + ".csv");
    const std::string space =
        on_hopper ? fmt::format(" --space block_m=128 block_n=64 warps=12 stages=2 schedule={},{}", 3 | defect.schedule_bits,
                                7 | defect.schedule_bits)
                  : std::string(" --space block_m=64,128 block_n=64 warps=4 stages=2");
    const std::string command = std::string(ATTN_TUNE_BINARY) + " --shape " + defect.shape + " --family " + defect.family +
                                (defect.causal ? " --causal" : "") + " --inputs " + defect.inputs +
                                (defect.options.empty() ? "" : " " + shell_words(defect.options)) + space +
                                " --seed 11 --min-reps 2"
                                " --max-reps 2 --min-time-ms 0 --no-cache --no-db --kernels-dir " +
                                dir.string() + " --out " + csv.string() + " > /dev/null 2>&1";
    const int rc = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << command << ": every variant wrong means exit 1";
    const auto rows = read_csv(csv.string());
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& rec : rows) {
      EXPECT_EQ(rec.status, status::wrong) << name(rec.config) << ": " << rec.message;
      EXPECT_EQ(to_string(rec.inputs), defect.inputs);
    }
  }
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace attn::testing
