// Issue 18 item 5: each variant's GB/s (the memory a call moves at the least over its median) and
// its fraction of the device's copy bandwidth, which is measured once per run.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>

#include "core/problem.hpp"
#include "core/rates.hpp"
#include "run/copy_bandwidth.hpp"
#include "timing_runtime.hpp"

namespace attn {
namespace {

TEST(roofline, gbps_is_bytes_over_time_in_1e9_bytes_per_second) {
  EXPECT_DOUBLE_EQ(gbps(1'000'000'000, 1000.0), 1.0);
  EXPECT_DOUBLE_EQ(gbps(4'000'000, 0.001), 4000.0);
  EXPECT_EQ(gbps(1 << 20, 0.0), 0.0);  // not timed: 0, never infinite
  EXPECT_EQ(gbps(1 << 20, -1.0), 0.0);
}

TEST(roofline, copy_fraction_is_zero_without_a_copy_bandwidth) {
  EXPECT_DOUBLE_EQ(copy_fraction(3000, 4000), 0.75);
  EXPECT_EQ(copy_fraction(3000, 0), 0.0);
}

TEST(roofline, a_decode_shapes_bytes_are_its_kv_cache) {
  // 8, 32/8, 1, 8192, 128 bf16 (README's first decode row): K and V dominate.
  problem s = parse_shape("8,32,1,128");
  s.kv_heads = 8;
  s.kv_len = 8192;
  EXPECT_EQ(moved_bytes(s),
            2 * (8 * 32 * 1 * 128 * 2) + 2 * (int64_t{8} * 8 * 8192 * 128 * 2) + 8 * 32 * 4);
  // 0.0872 ms moves 268.6 MB: 3080 GB/s, 0.72 of the 4267 GB/s copy the README's table says.
  EXPECT_NEAR(gbps(moved_bytes(s), 0.0872), 3079.9, 0.05);
  EXPECT_NEAR(copy_fraction(gbps(moved_bytes(s), 0.0872), 4267), 0.72, 0.005);
}

TEST(roofline, a_window_reads_only_the_keys_some_query_sees) {
  // Decode against a cache of 8192 with a causal window of 1024: the last 1025 keys.
  problem s = parse_shape("8,32,1,128");
  s.kv_heads = 8, s.kv_len = 8192, s.causal = true, s.window_left = 1024;
  EXPECT_EQ(visible_keys(s, 8192), 1025);
  EXPECT_EQ(moved_bytes(s), 2 * (8 * 32 * 1 * 128 * 2) + 2 * (int64_t{8} * 8 * 1025 * 128 * 2) + 8 * 32 * 4);
  // Per sequence with their own lengths: 100 (all), 2000 (1025), 1025 (all).
  s.kv_lens = "100/2000/1025/1/8192/3000/4000/5000";
  EXPECT_EQ(kv_read_bytes(s), (100 + 1025 + 1025 + 1 + 1025 * 4) * int64_t{8} * 128 * 2);
  // Prefill with the same window: every key is some query's.
  problem p = parse_shape("1,4,4096,64");
  p.causal = true, p.window_left = 1024;
  EXPECT_EQ(visible_keys(p, 4096), 4096);
  // Both sides (left 1, right 1), 4 queries bottom-right on 6 keys: keys 1..5.
  problem b = parse_shape("1,1,4,64");
  b.kv_len = 6, b.window_left = 1, b.window_right = 1;
  EXPECT_EQ(visible_keys(b, 6), 5);
  // More queries than keys, a window of 5 left: the first 210 queries see nothing, the rest all 90.
  problem m = parse_shape("1,1,300,64");
  m.kv_len = 90, m.causal = true, m.window_left = 5;
  EXPECT_EQ(visible_keys(m, 90), 90);
  // Right side only, 31 keys ahead, on a sequence of 259: every key.
  problem r = parse_shape("1,1,259,64");
  r.kv_len = 259, r.window_right = 31;
  EXPECT_EQ(visible_keys(r, 259), 259);
  // A brute-force count over small shapes agrees.
  for (int64_t nq : {1, 3, 17})
    for (int64_t nk : {1, 5, 40})
      for (int64_t left : {-1, 0, 2, 9})
        for (int64_t right : {-1, 0, 3}) {
          problem t = parse_shape("1,1,1,64");
          t.q_len = nq, t.kv_len = nk, t.window_left = left, t.window_right = right;
          if (left < 0 && right < 0) continue;
          int64_t lo = nk, hi = 0;
          for (int64_t i = 0; i < nq; ++i) {
            const int64_t d = i + nk - nq;
            const int64_t first = left >= 0 ? std::max<int64_t>(0, d - left) : 0;
            const int64_t end = right >= 0 ? std::min(nk, d + right + 1) : nk;
            if (end > first) lo = std::min(lo, first), hi = std::max(hi, end);
          }
          EXPECT_EQ(visible_keys(t, nk), std::max<int64_t>(0, hi - lo)) << nq << " " << nk << " " << left << " " << right;
        }
}

TEST(roofline, describe_says_the_convention_or_why_not) {
  copy_bandwidth c;
  c.note = "no device: --compile-only";
  EXPECT_EQ(describe(c), "copy bandwidth not measured (no device: --compile-only)");
  c = {4267.4, int64_t(1) << 30, 5, ""};
  EXPECT_EQ(
      describe(c),
      "copy bandwidth 4267 GB/s (device-to-device copy of 1.0 GiB, read + write bytes = 2x its "
      "size, median of 5)");
}

TEST(energy, joules_per_call_is_the_power_times_the_calls_time) {
  EXPECT_DOUBLE_EQ(joules_per_call(350, 2), 0.7);  // a 2 ms call at 350 W is 0.7 J
  EXPECT_EQ(joules_per_call(0, 2), 0.0);           // the power was not measured
  EXPECT_EQ(joules_per_call(-5, 2), 0.0);
  EXPECT_EQ(joules_per_call(350, 0), 0.0);
  EXPECT_EQ(joules_per_call(std::nan(""), 2), 0.0);
}

TEST(energy, tflops_per_watt_is_flops_per_joule) {
  const problem s = parse_shape("4,32,4096,128");  // 1.0995e12 FLOPs a call
  EXPECT_DOUBLE_EQ(tflops_per_watt(s, 1.0995116277760), 1.0);
  EXPECT_DOUBLE_EQ(tflops_per_watt(s, 1.0995116277760e-3), 1000.0);
  EXPECT_EQ(tflops_per_watt(s, 0), 0.0);
}

TEST(copy_bandwidth, counts_read_and_written_bytes_over_the_median_copy) {
  timing_runtime rt;
  rt.kernel_ms = 0.5;  // every timed copy
  const copy_bandwidth c = measure_copy_bandwidth(rt, int64_t(1) << 20, 5);
  EXPECT_DOUBLE_EQ(c.gbps, 2.0 * (1 << 20) / 0.5e6);
  EXPECT_EQ(c.bytes, int64_t(1) << 20);
  EXPECT_EQ(c.reps, 5);
  EXPECT_EQ(rt.copies, 1 + 5);  // one untimed copy first
  EXPECT_EQ(rt.timed, 5);
  EXPECT_TRUE(c.note.empty()) << c.note;
}

TEST(copy_bandwidth, not_measured_when_memory_is_short_and_says_why) {
  timing_runtime rt;
  rt.free_bytes = int64_t(1) << 30;
  const copy_bandwidth c = measure_copy_bandwidth(rt);
  EXPECT_EQ(c.gbps, 0.0);
  EXPECT_EQ(rt.copies, 0);
  EXPECT_EQ(c.note, "1.0 GiB free, the copy needs 2.2 GiB");
}

}  // namespace
}  // namespace attn
