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
/// The bundle command's work: the table at `table_path` (a table file, or the tuned-results
/// database: of one device, `device_name` when it holds several) and its configs' cubins for
/// `arch`, written to `out`. Throws invalid_input / table_error for bad input.
int make_bundle(const std::string& table_path, const std::string& arch, const std::string& out,
                const std::string& cache_dir, bool force, const std::string& device_name = "");
int run_db(const options& opt);

}  // namespace attn
