#pragma once
// Which shapes of a sweep the database already answers.
#include <functional>
#include <optional>
#include <vector>

#include "db/tuned_db.hpp"

namespace attn {

/// Per shape: the database's entry for it (the sweep skips that shape), or nullopt (tune it).
/// All nullopt without a database (--no-db) or with `retune`.
std::vector<std::optional<tuning_entry>> shapes_to_tune(const std::vector<problem>& shapes, const tuned_db* db,
                                                        const std::function<tuning_key(const problem&)>& key_of,
                                                        bool retune);

}  // namespace attn
