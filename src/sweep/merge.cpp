#include "sweep/merge.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

namespace attn {

std::vector<bool> rows_done(const std::vector<sweep_row>& rows, const std::vector<record>& results) {
  std::set<std::string> have;
  for (const auto& r : results) have.insert(problem_key(r.shape));
  std::vector<bool> done;
  for (const auto& row : rows) done.push_back(have.count(problem_key(row.problem)) > 0);
  return done;
}

std::vector<record> merge_results(const std::vector<std::vector<record>>& parts,
                                  const std::vector<std::string>& names) {
  std::vector<record> out;
  const record* reference = nullptr;
  std::string reference_file;
  std::map<std::string, std::string> shape_file;
  std::map<std::string, std::pair<std::string, std::string>> family_source;  // family -> (hash, file)
  for (size_t p = 0; p < parts.size(); ++p) {
    std::set<std::string> own;
    for (const auto& r : parts[p]) {
      if (!reference) {
        reference = &r;
        reference_file = names[p];
      }
      const auto& a = reference->device;
      if (r.device.name != a.name || r.device.cc_major != a.cc_major || r.device.cc_minor != a.cc_minor ||
          r.device.sm_count != a.sm_count)
        throw invalid_input(fmt::format("merge: '{}' is from {} ({} SMs) but '{}' is from {} ({} SMs)", names[p],
                                        r.device.name, r.device.sm_count, reference_file, a.name, a.sm_count));
      // Each family's rows carry the hash of that family's sources: compare within a family.
      const auto [first, inserted] = family_source.emplace(r.family, std::make_pair(r.kernel_hash, names[p]));
      if (!inserted && first->second.first != r.kernel_hash)
        throw invalid_input(fmt::format("merge: '{}' was tuned with {} kernel sources {} but '{}' with {}", names[p],
                                        r.family, r.kernel_hash, first->second.second, first->second.first));
      const auto key = problem_key(r.shape);
      own.insert(key);
      if (auto it = shape_file.find(key); it != shape_file.end() && it->second != names[p])
        throw invalid_input(fmt::format("merge: shape {} is in both '{}' and '{}'", describe(r.shape), it->second,
                                        names[p]));
      out.push_back(r);
    }
    for (const auto& key : own) shape_file.emplace(key, names[p]);
  }
  return out;
}

}  // namespace attn
