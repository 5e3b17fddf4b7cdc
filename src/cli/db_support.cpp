#include "cli/db_support.hpp"
#include "cli/command_support.hpp"

#include <fmt/format.h>

#include "db/entry_choice.hpp"
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
  s.objective = parse_objective(opt.objective);
  s.regime = parse_regime(opt.regime);
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

results_input read_results(const std::string& path, const std::string& device_name) {
  results_input in;
  if (looks_like_sqlite(path)) {
    const tuned_db db = tuned_db::open_read_only(path);  // export, check and bundle never write it
    entry_choice chosen = choose_entries(db.list(), device_name, path);
    for (int64_t id : chosen.ids) {
      auto e = db.get(id);
      if (!e) continue;  // forgotten by another process meanwhile
      in.records.insert(in.records.end(), e->records.begin(), e->records.end());
    }
    in.notes = std::move(chosen.notes);
    return in;
  }
  std::vector<record> rows = read_csv_of_known_families(path);
  std::vector<device_identity> each;
  for (const record& r : rows) each.push_back(identity_of(r.device));
  const auto devices = tally(each);
  const auto device = choose_device(devices, device_name, path, "row(s)");
  for (size_t i = 0; i < rows.size(); ++i)
    if (device && each[i] == *device) in.records.push_back(std::move(rows[i]));
  if (devices.size() > 1)
    in.notes.push_back(fmt::format("{}: reading the rows of {}; {} row(s) of other devices left out", path,
                                   describe(*device), rows.size() - in.records.size()));
  return in;
}

std::vector<record> read_results_noting(const std::string& path, const std::string& device_name) {
  results_input in = read_results(path, device_name);
  for (const auto& note : in.notes) fmt::print(stderr, "note: {}\n", note);
  return std::move(in.records);
}

std::string from_db_note(const tuning_entry& e) {
  return fmt::format("from the database, tuned {} (attn-tune {}, entry {}); --retune to measure again",
                     e.tuned_at, e.version, e.id);
}

}  // namespace attn
