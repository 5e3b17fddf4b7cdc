#pragma once
// From per-variant rows to one row per shape: the tuner's choice and its runner-up.
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"

namespace attn {

struct best_row {
  record best;                      ///< rank 1 (or, in files without ranks, the fastest ok)
  std::optional<record> runner_up;  ///< the next ranked ok variant
  /// runner_up's median over best's, minus one (0.03 = the runner-up is 3% slower).
  double runner_up_gap = 0;
};

/// One row per shape (shape_key), in the order shapes first appear. Shapes without an ok
/// variant are left out.
std::vector<best_row> best_table(const std::vector<record>& rows);
/// Columns: name-free problem fields, dtype, causal, device, best config, TFLOPS, ms, error,
/// memory saving ratio, runner-up config and gap. Atomic write like write_csv.
void write_best_csv(const std::string& path, const std::vector<best_row>& rows);
/// Throws invalid_input when `path` is a best table (its header has best_config): the readers of
/// per-variant results say so, and which file to pass instead (x.csv beside x.best.csv).
void refuse_best_table(const std::string& path);

}  // namespace attn
