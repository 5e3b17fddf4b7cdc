#include "cli/resume_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "run/search.hpp"
#include "run/tuner.hpp"

namespace attn {

namespace {

// The config names this run tunes for shape s with the family (the tuner's own list: --configs,
// else its space; every config of it for --search random, which draws some).
std::set<std::string> space_configs(const options& opt, size_t family, const problem& s) {
  tune_options t;
  t.family = opt.families[family];
  t.space = opt.spaces[family];
  for (const auto& c : opt.configs) t.configs.push_back(parse_config_name(c));
  std::set<std::string> out;
  for (const auto& c : configs_of(t)) out.insert(name(c));
  (void)s;  // (where a space depends on the shape, configs_of takes it)
  return out;
}

// Whether the family refuses the shape outright: none of its space's configs can run there.
bool refuses(const options& opt, size_t family, const problem& s, const resource_limits& limits) {
  const kernel_family& f = find_family(opt.families[family]);
  for (const auto& c : space_configs(opt, family, s))
    if (!f.reject_reason(parse_config_name(c), s, limits)) return false;
  return true;
}

}  // namespace

std::string resume_mismatch(const options& opt, const std::vector<record>& kept, const resource_limits& limits) {
  // Per shape, in file order: each family's configs.
  std::vector<std::string> order;
  std::map<std::string, std::pair<problem, std::map<std::string, std::set<std::string>>>> shapes;
  for (const record& r : kept) {
    const std::string key = problem_key(r.shape);
    if (!shapes.count(key)) order.push_back(key);
    shapes[key].first = r.shape;
    shapes[key].second[r.family].insert(name(r.config));
  }
  const bool sampled = parse_search(opt.search) == search_kind::random;
  for (const std::string& key : order) {
    const auto& [shape, families] = shapes[key];
    const std::string where = fmt::format("holds {}", describe(shape));
    bool superseded = false;
    for (const auto& [family, configs] : families) {
      const auto at = std::find(opt.families.begin(), opt.families.end(), family);
      if (at == opt.families.end())
        return fmt::format("{} tuned with family {}, which this run does not search (--family {})", where, family,
                           opt.family);
      superseded |= opt.families_defaulted && find_family(family).supersedes_others;
      const std::set<std::string> mine = space_configs(opt, static_cast<size_t>(at - opt.families.begin()), shape);
      for (const auto& c : configs)
        if (!mine.count(c)) return fmt::format("{} tuned with another {} space: {} is not in this run's", where, family, c);
      if (!sampled)
        for (const auto& c : mine)
          if (!configs.count(c)) return fmt::format("{} tuned with another {} space: it lacks {}", where, family, c);
    }
    for (size_t i = 0; i < opt.families.size(); ++i) {
      const kernel_family& f = find_family(opt.families[i]);
      if (families.count(f.name) || !runs_on(f, limits.cc_major, limits.cc_minor)) continue;
      if (superseded || refuses(opt, i, shape, limits)) continue;
      return fmt::format("{} tuned without family {}, which this run searches", where, f.name);
    }
  }
  return "";
}

}  // namespace attn
