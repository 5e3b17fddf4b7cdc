#pragma once
// A thin RAII layer over SQLite's C API: a connection and prepared statements, move-only, each
// failure thrown as sqlite_error with SQLite's message and the file's name.
#include <cstdint>
#include <stdexcept>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace attn {

struct sqlite_error : std::runtime_error {
  sqlite_error(const std::string& what, int code) : std::runtime_error(what), code(code) {}
  int code;  ///< SQLite's primary result code (SQLITE_NOTADB = 26, SQLITE_BUSY = 5, ...)
};

class sqlite_statement {
 public:
  sqlite_statement(sqlite3* db, const std::string& sql, const std::string& path);
  ~sqlite_statement();
  sqlite_statement(sqlite_statement&& o) noexcept;
  sqlite_statement(const sqlite_statement&) = delete;
  sqlite_statement& operator=(const sqlite_statement&) = delete;
  sqlite_statement& operator=(sqlite_statement&&) = delete;

  /// Parameters count from 1, as in SQL's ?1, ?2, ...
  sqlite_statement& bind(int i, const std::string& text);
  sqlite_statement& bind(int i, int64_t value);
  sqlite_statement& bind(int i, double value);
  /// True while there is a row to read; false when done. Throws sqlite_error.
  bool step();
  std::string text(int column) const;  ///< columns count from 0
  int64_t integer(int column) const;
  double real(int column) const;

 private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
  std::string m_path;
};

/// immutable: read-only, and SQLite assumes nothing changes the file (no locks, no -shm file): how
/// a database on read-only storage is read.
enum class sqlite_open { read_only, immutable, read_write, create };

class sqlite_connection {
 public:
  /// Opens (creating when `create`) the file. Throws sqlite_error naming it.
  sqlite_connection(const std::string& path, bool create)
      : sqlite_connection(path, create ? sqlite_open::create : sqlite_open::read_write) {}
  sqlite_connection(const std::string& path, sqlite_open mode);
  ~sqlite_connection();
  sqlite_connection(sqlite_connection&& o) noexcept;
  sqlite_connection(const sqlite_connection&) = delete;
  sqlite_connection& operator=(const sqlite_connection&) = delete;
  sqlite_connection& operator=(sqlite_connection&&) = delete;

  /// Runs statements without results. Throws sqlite_error.
  void exec(const std::string& sql);
  sqlite_statement prepare(const std::string& sql) const { return sqlite_statement(m_db, sql, m_path); }
  int64_t last_insert_id() const;
  const std::string& path() const { return m_path; }

 private:
  sqlite3* m_db = nullptr;
  std::string m_path;
};

/// A transaction that rolls back unless committed (BEGIN IMMEDIATE: the write lock is taken at
/// once, so concurrent writers queue on the busy timeout instead of deadlocking).
class sqlite_transaction {
 public:
  explicit sqlite_transaction(sqlite_connection& c);
  ~sqlite_transaction();
  sqlite_transaction(const sqlite_transaction&) = delete;
  sqlite_transaction& operator=(const sqlite_transaction&) = delete;
  void commit();

 private:
  sqlite_connection& m_connection;
  bool m_done = false;
};

}  // namespace attn
