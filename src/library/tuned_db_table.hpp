#pragma once
// The tuned-results database (src/db/tuned_db.hpp) as a library context's table: read once when
// the context opens it, read-only (never created, migrated or written).
#include <string>

#include "codegen/kernel_sources.hpp"
#include "library/tuned_table.hpp"

namespace attn {

/// Each entry's winner is an exact tuned shape of its device; the buckets are what `attn-tune
/// export` makes of those winners. Several entries of one shape on one device (other spaces,
/// families or kernel sources) give one exact shape: an entry whose winning family was tuned with
/// `kernels` (this library's sources) before one tuned with other sources, then the fastest
/// median, then the newest. Throws table_error naming the file.
tuned_table tuned_table_from_db(const std::string& path, const kernel_sources& kernels);

}  // namespace attn
