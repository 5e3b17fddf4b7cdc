#pragma once
// Each command returns the process exit code (see src/main.cpp); errors are thrown.
#include "cli/options.hpp"

namespace attn {

/// A variant hung: the results so far are written, and the process must end to free the GPU.
constexpr int exit_hung = 6;

int run_tune(const options& opt);
int run_sweep(const options& opt);
int run_export(const options& opt);
int run_check(const options& opt);
int run_merge(const options& opt);

}  // namespace attn
