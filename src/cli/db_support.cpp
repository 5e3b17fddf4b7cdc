#include "cli/db_support.hpp"

#include <fmt/format.h>

#include "report/csv.hpp"
#include "run/nvml.hpp"

namespace attn {

std::optional<tuned_db> open_run_db(const options& opt) {
  if (opt.no_db) return std::nullopt;
  return tuned_db::open(opt.db_path);
}

searched_space searched_space_of(const options& opt) {
  searched_space s;
  s.families = opt.families;
  s.spaces = opt.spaces;
  s.configs = opt.configs;
  s.search = parse_search(opt.search);
  s.samples = opt.samples;
  s.seed = opt.seed;
  s.inputs = opt.inputs;
  return s;
}

device_desc with_driver(device_desc d, const nvml_monitor& nvml) {
  if (!nvml.driver_version().empty()) d.cuda_version += ", driver " + nvml.driver_version();
  return d;
}

void remember(tuned_db& db, const tuning_key& key, const std::vector<record>& records) {
  try {
    db.put(key, records, utc_now());
    fmt::print("stored in the database {}\n", db.path());
  } catch (const std::exception& e) {
    fmt::print(stderr, "warning: the tuning was not stored in the database: {}\n", e.what());
  }
}

std::vector<record> read_results(const std::string& path) {
  if (!looks_like_sqlite(path)) return read_csv(path);
  return tuned_db::open(path).all_records();
}

std::string from_db_note(const tuning_entry& e) {
  return fmt::format("from the database, tuned {} (attn-tune {}, entry {}); --retune to measure again",
                     e.tuned_at, e.version, e.id);
}

}  // namespace attn
