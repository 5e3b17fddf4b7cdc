#pragma once
// A ranked, fully measured fa2 record of a problem on an H200 (median 0.5 ms), for tests that write
// problems out through the results' serializers and read them back.
#include "core/record.hpp"

namespace attn {

inline record measured_record(const problem& p, const tile_config& config = {64, 64, 4, 2}) {
  record r;
  r.device = {"NVIDIA H200", "sm_90", 9, 0, 132, "13.0", "13.0"};
  r.family = "fa2";
  r.shape = p;
  r.config = config;
  r.status = status::ok;
  r.reps = 20;
  r.median_ms = 0.5;
  r.tflops = tflops(p, 0.5);
  r.rank = 1;
  r.measured = measurement::full;
  return r;
}

/// The same of a backward variant (p.pass bwd).
inline record measured_record(const problem& p, const backward_config& config) {
  record r = measured_record(p);
  set_backward_config(r, config);
  return r;
}

}  // namespace attn
