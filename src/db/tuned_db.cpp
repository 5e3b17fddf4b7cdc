#include "db/tuned_db.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/private_dir.hpp"
#include "report/csv.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

constexpr const char* schema_v1 = R"(
CREATE TABLE tunings (
  id INTEGER PRIMARY KEY,
  device TEXT NOT NULL, cc TEXT NOT NULL, sm_count INTEGER NOT NULL,
  cuda_version TEXT NOT NULL, nvrtc_version TEXT NOT NULL, kernel_hashes TEXT NOT NULL,
  batch INTEGER NOT NULL, heads INTEGER NOT NULL, kv_heads INTEGER NOT NULL, q_len INTEGER NOT NULL,
  kv_len INTEGER NOT NULL, head_dim INTEGER NOT NULL, dtype TEXT NOT NULL, layout TEXT NOT NULL,
  causal INTEGER NOT NULL, space TEXT NOT NULL,
  best_family TEXT NOT NULL, best_config TEXT NOT NULL, tflops REAL NOT NULL, median_ms REAL NOT NULL,
  noise REAL NOT NULL, max_error REAL NOT NULL, runner_up TEXT NOT NULL,
  tuned_at TEXT NOT NULL, version TEXT NOT NULL, records_csv TEXT NOT NULL,
  UNIQUE (device, cc, sm_count, cuda_version, nvrtc_version, kernel_hashes, batch, heads, kv_heads,
          q_len, kv_len, head_dim, dtype, layout, causal, space));
PRAGMA user_version = 1;
)";

// Each step takes schema version i to i + 1.
constexpr const char* migrations[] = {
    R"(ALTER TABLE tunings ADD COLUMN sm_clock_min_mhz INTEGER NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN sm_clock_max_mhz INTEGER NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN throttled INTEGER NOT NULL DEFAULT 0;
       PRAGMA user_version = 2;)",
    R"(ALTER TABLE tunings ADD COLUMN gbps REAL NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN copy_fraction REAL NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN copy_gbps REAL NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN joules_per_call REAL NOT NULL DEFAULT 0;
       ALTER TABLE tunings ADD COLUMN tflops_per_watt REAL NOT NULL DEFAULT 0;
       PRAGMA user_version = 3;)",
};
static_assert(std::size(migrations) == db_schema_version - 1);

// The key's columns: these, the problem's fields (core/problem.hpp), then the space. Each is bound
// at its position in this list (?1, ?2, ...).
constexpr const char* device_key_columns[] = {"device", "cc", "sm_count", "cuda_version", "nvrtc_version",
                                              "kernel_hashes"};
constexpr int key_column_count = std::size(device_key_columns) + problem_field_count + 1;
// What an entry holds beyond its key.
constexpr const char* value_columns = "best_family, best_config, tflops, median_ms, noise, max_error, runner_up, "
                                      "tuned_at, version";
constexpr const char* clock_columns = "sm_clock_min_mhz, sm_clock_max_mhz, throttled";
// The best's rates (schema 3): its GB/s, that over the run's copy bandwidth, the copy bandwidth,
// its joules per call and TFLOPS per watt.
constexpr const char* rate_columns = "gbps, copy_fraction, copy_gbps, joules_per_call, tflops_per_watt";
constexpr int rate_column_count = 5;

std::vector<std::string> key_columns() {
  std::vector<std::string> out(std::begin(device_key_columns), std::end(device_key_columns));
  for (const auto& f : problem_fields()) out.push_back(f.name);
  out.push_back("space");
  return out;
}

const std::string key_where = [] {
  std::string out;
  const auto columns = key_columns();
  for (size_t i = 0; i < columns.size(); ++i) out += fmt::format("{}{} = ?{}", i ? " AND " : "", columns[i], i + 1);
  return out;
}();

const std::string entry_columns =
    fmt::format("id, {}, {}, {}, {}", fmt::join(key_columns(), ", "), value_columns, clock_columns, rate_columns);
// records_csv comes after the entry's columns in find() and get().
constexpr int records_column = 1 + key_column_count + 9 + 3 + rate_column_count;

// The problem fields the table has no column for: fields added to the list after the database was
// made. A writer adds them (add_problem_fields); a reader refuses the file until one has.
std::vector<const problem_field*> missing_fields(const sqlite_connection& c) {
  std::vector<std::string> have;
  auto q = c.prepare("PRAGMA table_info(tunings)");
  while (q.step()) have.push_back(q.text(1));
  std::vector<const problem_field*> out;
  for (const auto& f : problem_fields())
    if (std::find(have.begin(), have.end(), f.name) == have.end()) out.push_back(&f);
  return out;
}

// A real (softcap) is kept as its canonical text, so the key's equality is the text's.
bool stored_as_text(const problem_field& f) { return f.type == field_type::text || f.type == field_type::real; }

const char* sql_type(const problem_field& f) { return stored_as_text(f) ? "TEXT" : "INTEGER"; }

// Rebuilds the table with a column for every field of the list (its rows take a new field's
// default, a default-constructed problem's) and the key's UNIQUE over all of them, in the
// caller's transaction. The schema version stays: it counts the table's other changes.
void add_problem_fields(sqlite_connection& c) {
  const auto missing = missing_fields(c);
  if (missing.empty()) return;
  std::vector<std::string> old_columns;
  {
    auto q = c.prepare("PRAGMA table_info(tunings)");
    while (q.step()) old_columns.push_back(q.text(1));
  }
  std::string columns = "id INTEGER PRIMARY KEY";
  for (const std::string& name : old_columns) {
    if (name == "id") continue;
    auto q = c.prepare("SELECT type, \"notnull\", dflt_value FROM pragma_table_info('tunings') WHERE name = ?1");
    q.bind(1, name);
    q.step();
    columns += fmt::format(", {} {}{}{}", name, q.text(0), q.integer(1) ? " NOT NULL" : "",
                           q.text(2).empty() ? "" : " DEFAULT " + q.text(2));
  }
  std::string defaults;
  const problem none;
  for (const problem_field* f : missing) {
    const std::string value = stored_as_text(*f) ? fmt::format("'{}'", f->get(none)) : f->get(none);
    columns += fmt::format(", {} {} NOT NULL DEFAULT {}", f->name, sql_type(*f), value);
  }
  c.exec(fmt::format("CREATE TABLE tunings_new ({}, UNIQUE ({}))", columns, fmt::join(key_columns(), ", ")));
  c.exec(fmt::format("INSERT INTO tunings_new ({0}) SELECT {0} FROM tunings", fmt::join(old_columns, ", ")));
  c.exec("DROP TABLE tunings");
  c.exec("ALTER TABLE tunings_new RENAME TO tunings");
}

void bind_field(sqlite_statement& q, int i, const problem_field& f, const problem& p) {
  if (stored_as_text(f)) q.bind(i, f.get(p));
  else q.bind(i, int64_t{std::stoll(f.get(p))});
}

void bind_key(sqlite_statement& q, const tuning_key& k) {
  q.bind(1, k.device).bind(2, k.cc).bind(3, int64_t{k.sm_count}).bind(4, k.cuda_version).bind(5, k.nvrtc_version);
  q.bind(6, k.kernel_hashes);
  int i = 7;
  for (const auto& f : problem_fields()) bind_field(q, i++, f, k.shape);
  q.bind(i, k.space);
}

tuning_entry entry_of(const sqlite_statement& q) {
  tuning_entry e;
  int c = 0;
  e.id = q.integer(c++);
  tuning_key& k = e.key;
  k.device = q.text(c++);
  k.cc = q.text(c++);
  k.sm_count = static_cast<int>(q.integer(c++));
  k.cuda_version = q.text(c++);
  k.nvrtc_version = q.text(c++);
  k.kernel_hashes = q.text(c++);
  for (const auto& f : problem_fields()) {
    const int column = c++;
    f.set(k.shape, stored_as_text(f) ? q.text(column) : std::to_string(q.integer(column)));
  }
  k.space = q.text(c++);
  e.best_family = q.text(c++);
  e.best_config = q.text(c++);
  e.tflops = q.real(c++);
  e.median_ms = q.real(c++);
  e.noise = q.real(c++);
  e.max_error = q.real(c++);
  e.runner_up = q.text(c++);
  e.tuned_at = q.text(c++);
  e.version = q.text(c++);
  e.sm_clock_min_mhz = static_cast<int>(q.integer(c++));
  e.sm_clock_max_mhz = static_cast<int>(q.integer(c++));
  e.throttled = static_cast<int>(q.integer(c++));
  e.gbps = q.real(c++);
  e.copy_fraction = q.real(c++);
  e.copy_gbps = q.real(c++);
  e.joules_per_call = q.real(c++);
  e.tflops_per_watt = q.real(c++);
  return e;
}

invalid_input not_ours(const std::string& path, const std::string& why) {
  return invalid_input(fmt::format(
      "'{}' is not an attn-tune database ({}); nothing was changed. Move it away (mv '{}' '{}.old'), or "
      "choose another file with --db PATH (or ATTN_TUNE_DB), or run with --no-db",
      path, why, path, path));
}

invalid_input locked(const std::string& path, std::chrono::milliseconds wait) {
  return invalid_input(fmt::format("database '{}' is locked: another program held it for {:.0f} s; nothing was "
                                   "changed. Try again when it is done, or choose another file with --db PATH",
                                   path, wait.count() / 1000.0));
}

int64_t table_count(sqlite_connection& c) {
  auto q = c.prepare("SELECT count(*) FROM sqlite_master");
  q.step();
  return q.integer(0);
}

int read_version(sqlite_connection& c) {
  auto q = c.prepare("PRAGMA user_version");
  q.step();
  return static_cast<int>(q.integer(0));
}

// Creates or migrates to db_schema_version inside one write transaction; another process may
// have done it meanwhile, so the version is read again under the lock.
void upgrade(sqlite_connection& c) {
  sqlite_transaction tx(c);
  int version = read_version(c);
  if (version == 0) {
    if (table_count(c) > 0) throw not_ours(c.path(), "an SQLite database with other tables and no schema version");
    c.exec(schema_v1);
    version = 1;
  }
  for (; version < db_schema_version; ++version) c.exec(migrations[version - 1]);
  add_problem_fields(c);
  tx.commit();
}

}  // namespace

std::string default_db_path() {
  if (const char* d = std::getenv("ATTN_TUNE_DB"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/attn-tune/tuned.sqlite";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/attn-tune/tuned.sqlite";
  return temp_cache_dir() + "/tuned.sqlite";
}

bool looks_like_sqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 16 && std::string(magic, 16) == std::string("SQLite format 3\0", 16);
}

const char* db_schema_v1_sql() { return schema_v1; }
const char* db_migration_sql(int from) { return migrations[from - 1]; }

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  return text;
}

tuned_db tuned_db::open(const std::string& path, std::chrono::milliseconds wait) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw not_ours(path, "it is a directory");
  if (fs::exists(path, ec) && fs::file_size(path, ec) > 0 && !looks_like_sqlite(path))
    throw not_ours(path, "not an SQLite file");
  if (const fs::path parent = fs::path(path).parent_path(); parent == temp_cache_dir())
    ensure_private_dir(parent, ::geteuid());
  else if (!parent.empty())
    fs::create_directories(parent, ec);
  // Opening can meet another process creating the file or switching it to WAL, which SQLite
  // answers with SQLITE_BUSY without waiting: the open is tried again, each try waiting on the
  // lock for what is left of `wait`, and after `wait` in all it gives up (a lock held by another
  // program for longer is said, not waited on forever).
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (int attempt = 0;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    try {
      return open_once(path, std::max(left, std::chrono::milliseconds(1)));
    } catch (const sqlite_error& e) {
      if (e.code != 5 && e.code != 6) throw;  // SQLITE_BUSY, SQLITE_LOCKED
      if (left.count() <= 0) throw locked(path, wait);
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + attempt % 25));
    }
  }
}

tuned_db tuned_db::open_once(const std::string& path, std::chrono::milliseconds wait) {
  try {
    sqlite_connection c(path, true);
    c.exec(fmt::format("PRAGMA busy_timeout = {}", wait.count()));
    // The version and the table count in one read transaction: read apart, another attn-tune
    // creating the database between the two reads made a fresh one look like another program's.
    c.exec("BEGIN");
    const int version = read_version(c);  // SQLite reads the file first here
    const int64_t tables = table_count(c);
    c.exec("COMMIT");
    if (version > db_schema_version)
      throw invalid_input(fmt::format(
          "'{}' has database schema version {}, newer than the {} this attn-tune reads (a newer attn-tune wrote "
          "it); nothing was changed. Use that attn-tune, or move the file away (mv '{}' '{}.old'), or choose "
          "another file with --db PATH (or ATTN_TUNE_DB), or run with --no-db",
          path, version, db_schema_version, path, path));
    // Another program's database is refused before anything is changed (its journal mode too).
    if (version == 0 && tables > 0)
      throw not_ours(path, "an SQLite database with other tables and no schema version");
    c.exec("PRAGMA journal_mode = WAL");
    if (version < db_schema_version || !missing_fields(c).empty()) upgrade(c);
    return tuned_db(std::move(c));
  } catch (const sqlite_error& e) {
    if (e.code == 26 || e.code == 11) throw not_ours(path, e.what());  // SQLITE_NOTADB, SQLITE_CORRUPT
    throw;
  }
}

tuned_db tuned_db::open_read_only(const std::string& path, std::chrono::milliseconds wait) {
  // Messages without the tool's --db advice: a reader (the library) is not told how to run the tool.
  auto foreign = [&](const std::string& why) {
    return invalid_input(fmt::format("'{}' is not an attn-tune database ({})", path, why));
  };
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw invalid_input(fmt::format("database '{}' does not exist", path));
  if (!looks_like_sqlite(path)) throw foreign("not an SQLite file");
  // On read-only storage a database in WAL mode cannot be read the usual way (its -shm file
  // cannot be made): then it is opened as immutable, which nothing there can change anyway.
  for (const bool immutable : {false, true}) {
    try {
      sqlite_connection c(path, immutable ? sqlite_open::immutable : sqlite_open::read_only);
      c.exec(fmt::format("PRAGMA busy_timeout = {}", wait.count()));
      const int version = read_version(c);
      if (version == 0) throw foreign("an SQLite database without attn-tune's schema version");
      if (version != db_schema_version)
        throw invalid_input(fmt::format(
            "'{}' has database schema version {}, {} the {} this build reads: {}", path, version,
            version > db_schema_version ? "newer than" : "older than", db_schema_version,
            version > db_schema_version ? "use the attn-tune that wrote it (or export it with that one)"
                                        : fmt::format("run any attn-tune tuning with --db '{}' once to upgrade it", path)));
      if (const auto missing = missing_fields(c); !missing.empty())
        throw invalid_input(fmt::format("'{}' has no column for the problem field '{}', which this build keys on: run "
                                        "any attn-tune tuning with --db '{}' once to upgrade it",
                                        path, missing.front()->name, path));
      return tuned_db(std::move(c));
    } catch (const sqlite_error& e) {
      if (e.code == 26 || e.code == 11) throw foreign(e.what());  // SQLITE_NOTADB, SQLITE_CORRUPT
      if (e.code == 5 || e.code == 6) throw locked(path, wait);
      const bool unwritable_storage = e.code == 14 || e.code == 8;  // SQLITE_CANTOPEN, SQLITE_READONLY
      if (immutable || !unwritable_storage || ::access(fs::path(path).parent_path().empty() ? "." :
                                                           fs::path(path).parent_path().c_str(), W_OK) == 0)
        throw;
    }
  }
  throw std::logic_error("tuned_db::open_read_only: unreachable");
}

int tuned_db::schema_version() const { return read_version(m_connection); }

std::optional<tuning_entry> tuned_db::find(const tuning_key& key) const {
  auto q = m_connection.prepare(fmt::format("SELECT {}, records_csv FROM tunings WHERE {}", entry_columns, key_where));
  bind_key(q, key);
  if (!q.step()) return std::nullopt;
  tuning_entry e = entry_of(q);
  e.records = read_csv_text(q.text(records_column), fmt::format("{} entry {}", path(), e.id));
  return e;
}

std::optional<tuning_entry> tuned_db::get(int64_t id) const {
  auto q = m_connection.prepare(fmt::format("SELECT {}, records_csv FROM tunings WHERE id = ?1", entry_columns));
  q.bind(1, id);
  if (!q.step()) return std::nullopt;
  tuning_entry e = entry_of(q);
  e.records = read_csv_text(q.text(records_column), fmt::format("{} entry {}", path(), e.id));
  return e;
}

int64_t tuned_db::put(const tuning_key& key, const std::vector<record>& records, const std::string& tuned_at) {
  const record* best = nullptr;
  const record* second = nullptr;
  int clock_min = 0, clock_max = 0, throttled = 0;
  for (const record& r : records) {
    if (r.rank == 1) best = &r;
    if (r.rank == 2) second = &r;
    if (r.status != status::ok) continue;
    for (int mhz : {r.clocks.sm_clock_before_mhz, r.clocks.sm_clock_after_mhz}) {
      if (mhz <= 0) continue;
      clock_min = clock_min ? std::min(clock_min, mhz) : mhz;
      clock_max = std::max(clock_max, mhz);
    }
    throttled += (r.clocks.throttle & ~throttle_idle) != 0;
  }
  if (!best) throw std::invalid_argument("tuned_db::put: no record of rank 1");
  sqlite_transaction tx(m_connection);
  auto drop = m_connection.prepare(fmt::format("DELETE FROM tunings WHERE {}", key_where));
  bind_key(drop, key);
  drop.step();
  std::string places;
  for (int i = 1; i <= key_column_count + 13 + rate_column_count; ++i)
    places += fmt::format("{}?{}", i > 1 ? ", " : "", i);
  auto q = m_connection.prepare(fmt::format("INSERT INTO tunings ({}, {}, records_csv, {}, {}) VALUES ({})",
                                            fmt::join(key_columns(), ", "), value_columns, clock_columns,
                                            rate_columns, places));
  bind_key(q, key);
  int i = key_column_count + 1;
  q.bind(i++, best->family).bind(i++, config_name(*best)).bind(i++, best->tflops).bind(i++, best->median_ms);
  q.bind(i++, best->noise).bind(i++, best->max_error);
  q.bind(i++, second ? second->family + " " + config_name(*second) : std::string());
  q.bind(i++, tuned_at).bind(i++, std::string(ATTN_TUNE_VERSION)).bind(i++, csv_text(records));
  q.bind(i++, int64_t{clock_min}).bind(i++, int64_t{clock_max}).bind(i++, int64_t{throttled});
  for (const double rate : {best->gbps, best->copy_fraction, best->copy_gbps, best->joules_per_call,
                            best->tflops_per_watt})
    q.bind(i++, rate);
  q.step();
  const int64_t id = m_connection.last_insert_id();
  tx.commit();
  return id;
}

std::vector<tuning_entry> tuned_db::list() const {
  auto q = m_connection.prepare(fmt::format("SELECT {} FROM tunings ORDER BY id", entry_columns));
  std::vector<tuning_entry> out;
  while (q.step()) out.push_back(entry_of(q));
  return out;
}

bool tuned_db::forget(int64_t id) {
  auto q = m_connection.prepare("DELETE FROM tunings WHERE id = ?1");
  q.bind(1, id);
  q.step();
  auto n = m_connection.prepare("SELECT changes()");
  n.step();
  return n.integer(0) > 0;
}

}  // namespace attn
