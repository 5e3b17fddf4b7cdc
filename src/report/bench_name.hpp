#pragma once
// attn-bench's benchmark names and its own arguments (pure: unit-tested without a GPU).
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"

namespace attn {

/// "fa2.B2_H32-8_N1024_D128_bf16_bhsd_causal.m128_n64_w4_s2": no spaces and no '/', so a
/// --benchmark_filter regex matches it as typed, and stable across commits for compare.py.
std::string benchmark_name(const record& r);

struct bench_arguments {
  std::string results;      ///< the results CSV
  int device = 0;           ///< --device N
  bool min_time_given = false;  ///< --benchmark_min_time was given: it is respected
  bool help = false;            ///< -h/--help: print bench_usage() (and Google Benchmark's options)
  attention_pass pass = attention_pass::fwd;  ///< --pass: the table's shapes of this pass (fwdbwd: both)
};

/// What attn-bench takes, for --help and for a command line it cannot read.
extern const char* const bench_usage;

/// attn-bench's arguments after the program's name, before benchmark::Initialize takes its own
/// (--benchmark_*: only noted here). Throws invalid_input for a bad --device or a missing or
/// extra file argument (none is needed with --help).
bench_arguments parse_bench_arguments(const std::vector<std::string>& args);

}  // namespace attn
