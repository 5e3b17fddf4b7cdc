#pragma once
// Rows checked in float64 on the CPU for every variant: the first and last rows of the problem
// and random ones. Expected values are computed once per shape.
#include <cstdint>
#include <vector>

#include "verify/gpu_reference.hpp"

namespace attn {

struct cpu_sample {
  int64_t b, h, i;
  std::vector<double> out;
  double lse;
};

/// `count` rows (at least the first and the last) of pr's inputs, seeded by `seed`, with their
/// expected output and LSE in float64.
std::vector<cpu_sample> cpu_samples(const device_runtime& rt, const device_problem& pr, int count, uint64_t seed);
/// Largest |error| of the sampled rows; NaN if any output is not finite.
double cpu_sample_error(const device_runtime& rt, const device_problem& pr, const std::vector<cpu_sample>& samples);

}  // namespace attn
