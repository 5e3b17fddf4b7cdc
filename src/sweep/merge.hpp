#pragma once
// Pure pieces of the sweep workflow: which rows are done, and merging shard results.
#include <string>
#include <vector>

#include "core/record.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {

/// done[i]: results already hold rows[i]'s shape (so --resume skips it).
std::vector<bool> rows_done(const std::vector<sweep_row>& rows, const std::vector<record>& results);

/// Concatenates shard results. Throws invalid_input naming both files when they come from
/// different devices (name, compute capability, SM count) or kernel sources, or when two files
/// hold the same shape.
std::vector<record> merge_results(const std::vector<std::vector<record>>& parts,
                                  const std::vector<std::string>& names);

}  // namespace attn
