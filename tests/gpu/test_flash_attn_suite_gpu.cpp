// FlashAttention's own forward tests for issue 23's features (tests/flash_attn_grid.hpp: its head
// dims, (seqlen_q, seqlen_k) pairs, causal, local windows, softcap, MHA/GQA/MQA, fp16/bf16, packed
// batches), case by case, through the family attn-tune picks for each (hopper where it takes the
// case, else fa2). Each case is checked on fresh random inputs with FlashAttention's rule, as every
// tune is (softcap's on wide inputs, whose scores saturate the cap); every variant of the suite's
// space (two configs, with fa2's heuristic splits) must pass. One test per head dim (1056 cases
// each, minutes on an H100), run only with ATTN_TUNE_FA_SUITE=1 (they skip otherwise, saying so, so that
// `ctest -L gpu` stays a few minutes): `ATTN_TUNE_FA_SUITE=1 ./attn_gpu_tests
// --gtest_filter='flash_attn_suite*'`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../flash_attn_grid.hpp"
#include "codegen/family.hpp"
#include "verify_all.hpp"

namespace attn::testing {
namespace {

class flash_attn_suite : public gpu_test, public ::testing::WithParamInterface<int64_t> {};

TEST_P(flash_attn_suite, every_case_passes) {
  const char* on = std::getenv("ATTN_TUNE_FA_SUITE");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "FlashAttention's grid runs with ATTN_TUNE_FA_SUITE=1 (minutes)";
  if (m_gpu.backend != backend::cuda) GTEST_SKIP() << "the suite runs the CUDA families (hopper, fa2)";
  const int64_t d = GetParam();
  const search_space hopper = flash_attn_suite_space(true), fa2 = flash_attn_suite_space(false);
  int cases = 0, on_hopper = 0, variants = 0;
  for_each_flash_attn_case(d, [&](const problem& s, const flash_attn_window&) {
    SCOPED_TRACE(describe(s));  // a failure names its case
    const bool hopper_takes = !hopper_skip_reason(m_gpu, s).has_value();
    // Softcap on standard-normal scores (spread 1) is nearly the identity; FlashAttention scales Q
    // by the cap so that tanh saturates: wide inputs' scores of 20 to 40 do that here.
    const int ok = verify_all(s, m_gpu, m_cache, hopper_takes ? hopper : fa2, hopper_takes ? "hopper" : "fa2", true,
                              s.softcap > 0 ? input_kind::wide : input_kind::normal);
    EXPECT_GE(ok, 1) << "no variant passed";
    ++cases, on_hopper += hopper_takes, variants += ok;
  });
  std::printf("head dim %lld: %d cases (%d on hopper), %d variants passed\n", static_cast<long long>(d), cases,
              on_hopper, variants);
}

INSTANTIATE_TEST_SUITE_P(flash_attn_suite, flash_attn_suite, ::testing::ValuesIn(flash_attn_head_dims),
                         [](const auto& info) { return "d" + std::to_string(info.param); });

}  // namespace
}  // namespace attn::testing
