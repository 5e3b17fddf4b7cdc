#pragma once
// The subcommands' own options (sweep, merge, export, check, db, bundle), one function each, and
// their checks once parsed; the tuning options they share are options.cpp's.
#include <CLI/CLI.hpp>

#include "cli/options.hpp"

namespace attn {

struct subcommands {
  CLI::App* sweep;
  CLI::App* merge;
  CLI::App* export_table;
  CLI::App* check;
  CLI::App* db;
  CLI::App* bundle;  ///< listed for --help only: main() runs `attn-tune bundle ...` itself
};

/// Adds each subcommand with its options, bound to `out`.
subcommands add_subcommands(CLI::App& app, options& out);
/// After parsing: which command ran (out.command), and each command's own checks. Throws
/// invalid_input naming the bad value.
void check_subcommands(const subcommands& c, options& out);

}  // namespace attn
