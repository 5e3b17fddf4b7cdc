#include "db/shapes_to_tune.hpp"

namespace attn {

std::vector<std::optional<tuning_entry>> shapes_to_tune(const std::vector<problem>& shapes, const tuned_db* db,
                                                        const std::function<tuning_key(const problem&)>& key_of,
                                                        bool retune) {
  std::vector<std::optional<tuning_entry>> out(shapes.size());
  if (!db || retune) return out;
  for (size_t i = 0; i < shapes.size(); ++i) out[i] = db->find(key_of(shapes[i]));
  return out;
}

}  // namespace attn
