// -v/--verbose (issue 11, item 9): every variant's compile log and measurements as they happen,
// not after the table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/cache.hpp"
#include "report/variant_line.hpp"
#include "run/tuner.hpp"

namespace attn {
namespace {

record sample() {
  record r;
  r.family = "fa2";
  r.config = {64, 64, 4, 2};
  r.status = status::compiled;
  r.registers = 104;
  r.spill_bytes = 8;
  r.shared_memory_bytes = 46080;
  r.compile_ms = 815.6;
  return r;
}

TEST(variant_line, compiled_with_its_whole_log_indented) {
  EXPECT_EQ(variant_line(variant_event::compiled, sample(), "ptxas info : Used 104 registers\n\n  ptxas info : x\n"),
            "compiled fa2 m64_n64_w4_s2: 104 registers, 8 spill bytes, 45.0 KiB shared memory, 816 ms\n"
            "    ptxas info : Used 104 registers\n"
            "      ptxas info : x");
  record cached = sample();
  cached.cached = true;
  EXPECT_EQ(variant_line(variant_event::compiled, cached),
            "compiled fa2 m64_n64_w4_s2: 104 registers, 8 spill bytes, 45.0 KiB shared memory, from the cache");
  record bad = sample();
  bad.status = status::compile_error;
  EXPECT_EQ(variant_line(variant_event::compiled, bad, "error: x\n"), "compile error fa2 m64_n64_w4_s2:\n    error: x");
}

TEST(variant_line, verified_and_timed) {
  record r = sample();
  r.max_error = 1.0703e-3;
  r.allowed_error = 6.066e-3;
  r.bound = "naive";
  EXPECT_EQ(variant_line(variant_event::verified, r),
            "verified fa2 m64_n64_w4_s2: ok, max error 1.070e-03 (allowed 6.066e-03, naive bound)");
  r.status = status::wrong;
  r.message = "max error 1.0e+00 > allowed 6.1e-03";
  EXPECT_EQ(variant_line(variant_event::verified, r),
            "verified fa2 m64_n64_w4_s2: wrong, max error 1.0e+00 > allowed 6.1e-03");
  r.status = status::ok;
  r.median_ms = 2.90821;
  r.noise = 0.0081;
  r.iqr_ms = 0.1398;
  r.reps = 40;
  r.tflops = 378.12;
  EXPECT_EQ(variant_line(variant_event::screened, r),
            "screened fa2 m64_n64_w4_s2: 2.9082 ms +-0.8% (IQR 0.1398, 40 reps), 378.1 TFLOPS");
  EXPECT_EQ(variant_line(variant_event::measured, r).rfind("measured fa2 m64_n64_w4_s2: 2.9082 ms", 0), 0u);
  r.status = status::launch_error;
  r.message = "illegal address";
  EXPECT_EQ(variant_line(variant_event::measured, r), "timing fa2 m64_n64_w4_s2: launch_error, illegal address");
}

// Each variant's news comes as it is compiled: before the progress line that counts it, and so
// before the next variant is compiled (one compile thread), not once the run is over.
TEST(verbose, each_variant_is_reported_as_it_is_compiled) {
  const compile_cache no_cache("", kernel_sources::embedded());
  problem s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = s.kv_len = 128, s.head_dim = 64;
  tune_options t;
  t.family = "fa2";
  t.configs = {{64, 64, 4, 1}, {64, 64, 4, 2}, {256, 64, 4, 2}};  // the last is pruned: 4 warps, 256 rows
  t.jobs = 1;
  std::vector<std::string> seen;
  t.progress = [&](const std::string& line) { seen.push_back(line); };
  t.on_variant = [&](variant_event e, const record& r, const std::string& log) {
    EXPECT_EQ(e, variant_event::compiled);
    EXPECT_NE(log.find("registers"), std::string::npos) << "the compiler's whole log: " << log;
    seen.push_back(name(r.config));
  };
  const tune_result r = compile_only(s, "sm_80", no_cache, t);
  EXPECT_EQ(seen, (std::vector<std::string>{"m64_n64_w4_s1", "compiling 1/2 (0 from cache)", "m64_n64_w4_s2",
                                            "compiling 2/2 (0 from cache)"}));
  EXPECT_EQ(r.records.size(), 3u);
}

}  // namespace
}  // namespace attn
