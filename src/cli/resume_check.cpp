#include "cli/resume_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "run/search.hpp"
#include "run/tuner.hpp"

namespace attn {

namespace {

// The config names this run tunes for shape s with the family on a device of sm_count SMs (0:
// compile-only) (the tuner's own list: --configs, else its space for s; every config of it for
// --search random, which draws some).
std::set<std::string> space_configs(const options& opt, size_t family, const problem& s, int sm_count) {
  tune_options t;
  t.family = opt.families[family];
  t.space = opt.spaces[family];
  std::set<std::string> out;
  if (s.pass == attention_pass::bwd) {  // the backward's variants of the family
    for (const auto& c : opt.configs)
      if (is_backward_config_name(c)) t.backward_configs.push_back(parse_backward_config(c));
    if (has_backward_kernels(t.family))
      for (const auto& c : backward_configs_of(t, s)) out.insert(name(c));
    return out;
  }
  for (const auto& c : opt.configs)
    if (!is_backward_config_name(c)) t.configs.push_back(parse_config_name(c));
  for (const auto& c : configs_of(t, s, sm_count)) out.insert(name(c));
  return out;
}

// Whether the family refuses the shape outright: none of its space's configs can run there.
bool refuses(const options& opt, size_t family, const problem& s, int sm_count, const resource_limits& limits) {
  const kernel_family& f = find_family(opt.families[family]);
  for (const auto& c : space_configs(opt, family, s, sm_count))
    if (s.pass == attention_pass::bwd ? !backward_reject(parse_backward_config(c), s, limits)
                                      : !f.reject_reason(parse_config_name(c), s, limits))
      return false;
  return true;
}

}  // namespace

std::string resume_mismatch(const options& opt, const std::vector<record>& kept, const resource_limits& limits) {
  // Per shape, in file order: each family's configs.
  std::vector<std::string> order;
  struct tuned_shape {
    problem shape;
    int sm_count = 0;  ///< the device's the records were tuned on (0: compile-only)
    std::map<std::string, std::set<std::string>> families;
  };
  std::map<std::string, tuned_shape> shapes;
  for (const record& r : kept) {
    const std::string key = problem_key(r.shape);
    if (!shapes.count(key)) order.push_back(key);
    shapes[key].shape = r.shape;
    shapes[key].sm_count = r.device.sm_count;
    shapes[key].families[r.family].insert(config_name(r));
  }
  const bool sampled = parse_search(opt.search) == search_kind::random;
  for (const std::string& key : order) {
    const auto& [shape, sm_count, families] = shapes[key];
    const std::string where = fmt::format("holds {}", describe(shape));
    bool superseded = false;
    for (const auto& [family, configs] : families) {
      const auto at = std::find(opt.families.begin(), opt.families.end(), family);
      if (at == opt.families.end())
        return fmt::format("{} tuned with family {}, which this run does not search (--family {})", where, family,
                           opt.family);
      // With the default families, hopper supersedes the others on sm_90; for a decode-sized
      // problem the families with the decode axes do (run/orchestrator.cpp's runnable).
      const kernel_family& f = find_family(family);
      superseded |= opt.families_defaulted && (decode_sized(shape) ? f.default_space.decode_axes : f.supersedes_others);
      const std::set<std::string> mine =
          space_configs(opt, static_cast<size_t>(at - opt.families.begin()), shape, sm_count);
      for (const auto& c : configs)
        if (!mine.count(c)) return fmt::format("{} tuned with another {} space: {} is not in this run's", where, family, c);
      if (!sampled)
        for (const auto& c : mine)
          if (!configs.count(c)) return fmt::format("{} tuned with another {} space: it lacks {}", where, family, c);
    }
    for (size_t i = 0; i < opt.families.size(); ++i) {
      const kernel_family& f = find_family(opt.families[i]);
      if (families.count(f.name) || !runs_on(f, limits.cc_major, limits.cc_minor)) continue;
      if (superseded || refuses(opt, i, shape, sm_count, limits)) continue;
      return fmt::format("{} tuned without family {}, which this run searches", where, f.name);
    }
  }
  return "";
}

}  // namespace attn
