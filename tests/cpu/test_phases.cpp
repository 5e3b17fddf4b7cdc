// The tuning's summary line: how many variants each phase took in and how long it took.
#include <gtest/gtest.h>

#include "run/phases.hpp"

namespace attn {
namespace {

tune_result screened_run() {
  tune_result r;
  r.compiled = 58;
  r.cached = 16;
  r.compile_seconds = 4.06;
  r.reference_seconds = 0.31;
  r.verified = 57;
  r.verify_seconds = 1.04;
  r.screened = 57;
  r.screen_seconds = 0.92;
  r.refined = 5;
  r.refine_seconds = 1.26;
  r.total_seconds = 7.66;
  return r;
}

TEST(phase_summary, names_every_phase_with_its_count_and_seconds) {
  EXPECT_EQ(phase_summary(screened_run()),
            "compiled 58 variants (16 from cache) in 4.1 s; reference in 0.3 s (while compiling); verified 57 in 1.0 s; "
            "screened 57 in 0.9 s; refined 5 in 1.3 s; total 7.7 s");
}

TEST(phase_summary, an_exhaustive_search_says_it_screened_none) {
  tune_result r = screened_run();
  r.screened = 0;
  r.screen_seconds = 0;
  r.refined = 57;
  EXPECT_EQ(phase_summary(r),
            "compiled 58 variants (16 from cache) in 4.1 s; reference in 0.3 s (while compiling); verified 57 in 1.0 s; "
            "screened 0 in 0.0 s; refined 57 in 1.3 s; total 7.7 s");
}

TEST(phase_summary, compile_failures_reruns_and_a_spent_budget_are_said) {
  tune_result r = screened_run();
  r.records.resize(3);
  r.records[0].status = status::compile_error;
  r.records[1].status = status::compile_error;
  r.records[2].status = status::ok;
  r.rerun = 4;
  r.rerun_seconds = 2.0;
  r.budget_spent = true;
  EXPECT_EQ(phase_summary(r),
            "compiled 58 variants (16 from cache; 2 more failed to compile) in 4.1 s; reference in 0.3 s (while compiling); "
            "verified 57 in 1.0 s; screened 57 in 0.9 s; refined 5 in 1.3 s; re-ran 4 in fresh processes in "
            "2.0 s (a variant lost the device context); total 9.7 s\n"
            "budget: --budget-s ran out before every variant was measured; the best found so far stands");
}

TEST(phase_summary, compile_only_has_no_device_phases) {
  tune_result r;
  r.compiled = 12;
  r.compile_seconds = r.total_seconds = 3.0;
  EXPECT_EQ(phase_summary(r), "compiled 12 variants (0 from cache) in 3.0 s; total 3.0 s");
}

}  // namespace
}  // namespace attn
