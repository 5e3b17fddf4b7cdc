#pragma once
// The tuned-results database: one entry per tuning of a shape, keyed by the device, the kernel
// sources' hash per family, the shape and the space searched, holding the tuning's ranked records.
// SQLite, WAL mode with a busy timeout, so several processes (sweep --devices, Slurm tasks on one
// node) can write at once; the schema is versioned (PRAGMA user_version) and migrated on open.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/sqlite.hpp"
#include "core/problem.hpp"
#include "core/record.hpp"

namespace attn {

/// 1: the tunings table; 2: the SM clock range and throttled count of each tuning (NVML); 3: the
/// best's GB/s, its fraction of the copy bandwidth, the copy bandwidth, its joules per call and
/// TFLOPS per watt.
constexpr int db_schema_version = 3;

/// $ATTN_TUNE_DB, else $XDG_CACHE_HOME/attn-tune/tuned.sqlite, else ~/.cache/attn-tune/tuned.sqlite.
std::string default_db_path();
/// True when the file starts with SQLite's magic header ("SQLite format 3").
bool looks_like_sqlite(const std::string& path);

struct tuning_key {
  std::string device;         ///< "NVIDIA H200"
  std::string cc;             ///< "9.0"
  int sm_count = 0;
  std::string cuda_version;   ///< runtime and driver, "13.0 (driver 13.0)"
  std::string nvrtc_version;
  std::string kernel_hashes;  ///< "fa2=<16 hex>,wgmma=<16 hex>": each family's sources
  attn::problem shape;
  std::string space;          ///< the search and each family's space ("screen; fa2: ...")
};

struct tuning_entry {
  int64_t id = 0;
  tuning_key key;
  std::string best_family, best_config, runner_up;  ///< runner_up: "family config" or ""
  double tflops = 0, median_ms = 0, noise = 0, max_error = 0;
  std::string tuned_at;  ///< UTC, "2026-12-01 08:15:00"
  std::string version;   ///< attn-tune's
  int sm_clock_min_mhz = 0, sm_clock_max_mhz = 0;  ///< over the timed variants; 0 without NVML
  int throttled = 0;  ///< timed variants measured with a throttle reason other than idle set
  double gbps = 0, copy_fraction = 0, copy_gbps = 0;  ///< the best's (record's); 0 before schema 3
  double joules_per_call = 0, tflops_per_watt = 0;    ///< the same
  std::vector<record> records;  ///< the tuning's ranked records (find and get only)
};

class tuned_db {
 public:
  /// Opens the database, creating it (and its directory) or migrating an older schema. Throws
  /// invalid_input naming the file and how to move it away when it is not an attn-tune database
  /// (nothing in it changed, its journal mode neither) or has a newer schema, or when another
  /// program holds its lock for longer than `wait`; sqlite_error for other failures.
  static tuned_db open(const std::string& path, std::chrono::milliseconds wait = default_wait);
  /// Opens an existing database for reading only: never creates, migrates or writes it (a
  /// library's table, db list). On read-only storage it is read as immutable. Throws invalid_input
  /// naming the file when it is missing, not an attn-tune database, of another schema version (an
  /// older one: any attn-tune run with --db upgrades it), or locked for longer than `wait`.
  static tuned_db open_read_only(const std::string& path, std::chrono::milliseconds wait = default_wait);
  /// How long a command waits on another process's lock before it says so.
  static constexpr std::chrono::milliseconds default_wait{60000};

  std::optional<tuning_entry> find(const tuning_key& key) const;
  std::optional<tuning_entry> get(int64_t id) const;
  /// Stores a tuning (its records, ranked) in place of any entry of the same key; returns its id.
  /// The summary (best, runner-up, clocks) comes from the records' ranks. One transaction.
  int64_t put(const tuning_key& key, const std::vector<record>& records, const std::string& tuned_at);
  /// Every entry, oldest first, without records.
  std::vector<tuning_entry> list() const;
  bool forget(int64_t id);
  int schema_version() const;
  const std::string& path() const { return m_connection.path(); }

 private:
  explicit tuned_db(sqlite_connection c) : m_connection(std::move(c)) {}
  static tuned_db open_once(const std::string& path, std::chrono::milliseconds wait);  ///< one try of open()
  mutable sqlite_connection m_connection;
};

/// The SQL that creates schema version 1 (tests build an old database with it).
const char* db_schema_v1_sql();
/// The SQL that takes schema version `from` to from + 1 (1 <= from < db_schema_version).
const char* db_migration_sql(int from);
/// "2026-12-01 08:15:00", UTC, now.
std::string utc_now();

}  // namespace attn
