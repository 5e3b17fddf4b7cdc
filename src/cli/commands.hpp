#pragma once
// Each command returns the process exit code (see src/main.cpp); errors are thrown.
#include "cli/options.hpp"

namespace attn {

int run_tune(const options& opt);
int run_sweep(const options& opt);
int run_export(const options& opt);
int run_check(const options& opt);
int run_merge(const options& opt);
/// `attn-tune bundle ...` (argv from "bundle" on): parses its own options, returns the exit code.
int run_bundle_main(int argc, char** argv);
int run_db(const options& opt);

}  // namespace attn
