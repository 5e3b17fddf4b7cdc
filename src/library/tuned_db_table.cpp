#include "library/tuned_db_table.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "db/tuned_db.hpp"
#include "db/tuning_key.hpp"
#include "library/errors.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {

namespace {

// Whether the entry's winning family was tuned with these kernel sources: its "family=<hash>"
// item of kernel_hashes is the one this library's sources give.
bool same_sources(const tuning_entry& e, const kernel_sources& kernels) {
  std::string mine;
  try {
    mine = kernel_hashes({e.best_family}, kernels);
  } catch (const invalid_input&) {
    return false;  // a family this build does not know
  }
  const std::string& all = e.key.kernel_hashes;
  for (size_t start = 0; start <= all.size();) {
    const size_t end = std::min(all.find(',', start), all.size());
    if (all.compare(start, end - start, mine) == 0) return true;
    start = end + 1;
  }
  return false;
}

record winner_of(const tuning_entry& e, const std::string& path) {
  record r;
  r.status = status::ok;
  r.rank = 1;
  r.device.name = e.key.device;
  if (std::sscanf(e.key.cc.c_str(), "%d.%d", &r.device.cc_major, &r.device.cc_minor) != 2)
    throw table_error(fmt::format("'{}' entry {}: compute capability '{}' is not MAJOR.MINOR", path, e.id, e.key.cc));
  r.device.sm_count = e.key.sm_count;
  r.shape = e.key.shape;
  r.family = e.best_family;
  try {
    if (r.shape.pass == attention_pass::bwd) set_backward_config(r, parse_backward_config(e.best_config));
    else r.config = parse_config_name(e.best_config);
  } catch (const invalid_input& x) {
    throw table_error(fmt::format("'{}' entry {}: {}", path, e.id, x.what()));
  }
  r.median_ms = e.median_ms;
  r.tflops = e.tflops;
  return r;
}

}  // namespace

tuned_table tuned_table_from_db(const std::string& path, const kernel_sources& kernels) {
  std::vector<tuning_entry> entries;
  try {
    entries = tuned_db::open_read_only(path).list();
  } catch (const invalid_input& e) {
    throw table_error(fmt::format("cannot read the tuned-results database: {}", e.what()));
  } catch (const sqlite_error& e) {
    throw table_error(fmt::format("cannot read the tuned-results database: {}", e.what()));
  }
  // The preferred entry of each (device, shape), kept in the order the pairs first appear.
  using pair_key = std::tuple<std::string, std::string, int, std::string>;
  std::vector<pair_key> order;
  std::map<pair_key, const tuning_entry*> chosen;
  auto better = [&](const tuning_entry& a, const tuning_entry& b) {  // list() is oldest first
    const bool sa = same_sources(a, kernels), sb = same_sources(b, kernels);
    if (sa != sb) return sa;
    if (a.median_ms != b.median_ms) return a.median_ms < b.median_ms;
    return a.id > b.id;
  };
  for (const tuning_entry& e : entries) {
    const pair_key k{e.key.device, e.key.cc, e.key.sm_count, problem_key(e.key.shape)};
    auto [it, fresh] = chosen.emplace(k, &e);
    if (fresh) order.push_back(k);
    else if (better(e, *it->second)) it->second = &e;
  }
  std::vector<tuned_shape> exact;
  std::vector<best_row> rows;
  for (const pair_key& k : order) {
    const record r = winner_of(*chosen[k], path);
    exact.push_back({r.device, r.shape, r.family, r.config, r.median_ms, r.backward});
    rows.push_back({r, std::nullopt, 0});
  }
  return tuned_table::from_parts(path, std::move(exact), export_entries(rows));
}

}  // namespace attn
