#pragma once
// The tuned-results database on the command line: which file, the key of this run, answers from
// it, and reading it where a results CSV is expected (export, check).
#include <optional>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "db/tuned_db.hpp"
#include "db/tuning_key.hpp"

namespace attn {

/// The database of the run, or nullopt with --no-db. Throws invalid_input for a file that is not
/// one (tuned_db::open).
std::optional<tuned_db> open_run_db(const options& opt);
/// The families, spaces, configs and search of the run.
searched_space searched_space_of(const options& opt);
/// The device as the database keys it: with the driver's release (NVML's, "580.65.06") added to
/// the CUDA version when NVML can say it, so a driver update is a new key.
device_desc with_driver(device_desc d, const class nvml_monitor& nvml);
/// Stores a complete tuning and says where; a database that cannot be written only costs the
/// answer next time (a warning on stderr), never the tuning's results.
void remember(tuned_db& db, const tuning_key& key, const std::vector<record>& records);
struct results_input {
  std::vector<record> records;
  std::vector<std::string> notes;  ///< what was left out (other devices, older tunings of a shape)
};
/// Records of one device (db/entry_choice.hpp: `device_name`, else the only one) from a results CSV
/// or, when the file is an SQLite database, from its entries, of each shape only the newest. The
/// database is opened read-only (never created, migrated or written).
results_input read_results(const std::string& path, const std::string& device_name);
/// read_results' records, with a "note: ..." line on stderr for each thing left out of them.
std::vector<record> read_results_noting(const std::string& path, const std::string& device_name);
/// "from the database, tuned <date>; --retune to measure again" and what the entry says.
std::string from_db_note(const tuning_entry& e);

}  // namespace attn
