#pragma once
// The summary lines of a tuning: how many variants went through each phase and how long each
// phase took, and how the timings were made.
#include <string>

#include "run/tuner.hpp"

namespace attn {

/// "compiled 68 variants (16 from cache) in 2.2 s; reference in 0.2 s (while compiling); verified 60 in 1.1 s;
/// screened 60 in 0.8 s; refined 5 in 1.3 s; total 5.9 s" (the reference, verify, screen and
/// refine parts only when something was verified; "; N more failed to compile" in the brackets
/// when some did; the isolated re-runs, when there were any), and a second line when --budget-s
/// ran out.
std::string phase_summary(const tune_result& r);

/// "timing: median of >= 20 reps, until its 95% confidence half-width is within 1.0% of it or
/// 250 ms (at most 300 reps), L2 flushed before each; search: screen".
std::string timing_summary(const timing_options& t, search_kind search);

}  // namespace attn
