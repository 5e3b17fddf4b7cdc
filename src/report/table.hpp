#pragma once
// The ranked table on the terminal.
#include <string>
#include <vector>

#include "core/record.hpp"

namespace attn {

/// Ranks records: status ok first by median_ms ascending, then wrong, launch_error,
/// compile_error, compiled, pruned. Returns indices into `rows`.
std::vector<size_t> rank_order(const std::vector<record>& rows);
/// Columns: rank, config, ms, +-% (the median's noise), IQR, TFLOPS, error, regs, spills, smem
/// KiB, status (an ok one followed by "full" or "screen": how it was timed) (+ message, shortened; a
/// tied rank 1 says so first). `limit` rows at most (0 = all); a last line says how many were left out.
std::string format_table(const std::vector<record>& rows, size_t limit = 0);

}  // namespace attn
