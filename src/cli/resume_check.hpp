#pragma once
// sweep --resume keeps the shapes already in its --out: only when they were tuned with this run's
// families and spaces, or the file would mix two searches under one name.
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "core/device.hpp"
#include "core/record.hpp"

namespace attn {

/// Why `kept` (the records of --out) was not made by this run's --family and --space, on a device
/// with `limits`: "" when it was. Per shape: each family in the file must be one of the run's,
/// with exactly its space's configs (a subset for --search random); a family of the run missing
/// from it must be one the run would leave out there (another device's, superseded, or refusing
/// every config of its space for the shape).
std::string resume_mismatch(const options& opt, const std::vector<record>& kept, const resource_limits& limits);

}  // namespace attn
