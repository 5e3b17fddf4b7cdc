#include "db/sqlite.hpp"

#include <sqlite3.h>

#include <utility>

#include <fmt/format.h>

namespace attn {

namespace {

sqlite_error error_of(sqlite3* db, int code, const std::string& path, const std::string& doing) {
  const char* why = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return sqlite_error(fmt::format("database '{}': {}: {}", path, doing, why), code & 0xff);
}

}  // namespace

sqlite_statement::sqlite_statement(sqlite3* db, const std::string& sql, const std::string& path)
    : m_db(db), m_path(path) {
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &m_stmt, nullptr);
  if (rc != SQLITE_OK) throw error_of(db, rc, path, "preparing a query");
}

sqlite_statement::~sqlite_statement() {
  if (m_stmt) sqlite3_finalize(m_stmt);
}

sqlite_statement::sqlite_statement(sqlite_statement&& o) noexcept
    : m_db(o.m_db), m_stmt(std::exchange(o.m_stmt, nullptr)), m_path(std::move(o.m_path)) {}

sqlite_statement& sqlite_statement::bind(int i, const std::string& text) {
  const int rc = sqlite3_bind_text(m_stmt, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throw error_of(m_db, rc, m_path, "binding a value");
  return *this;
}

sqlite_statement& sqlite_statement::bind(int i, int64_t value) {
  const int rc = sqlite3_bind_int64(m_stmt, i, value);
  if (rc != SQLITE_OK) throw error_of(m_db, rc, m_path, "binding a value");
  return *this;
}

sqlite_statement& sqlite_statement::bind(int i, double value) {
  const int rc = sqlite3_bind_double(m_stmt, i, value);
  if (rc != SQLITE_OK) throw error_of(m_db, rc, m_path, "binding a value");
  return *this;
}

bool sqlite_statement::step() {
  const int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw error_of(m_db, rc, m_path, "running a query");
}

std::string sqlite_statement::text(int column) const {
  const auto* p = sqlite3_column_text(m_stmt, column);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)))
           : std::string();
}

int64_t sqlite_statement::integer(int column) const { return sqlite3_column_int64(m_stmt, column); }
double sqlite_statement::real(int column) const { return sqlite3_column_double(m_stmt, column); }

sqlite_connection::sqlite_connection(const std::string& path, sqlite_open mode) : m_path(path) {
  const bool reading = mode == sqlite_open::read_only || mode == sqlite_open::immutable;
  int flags = (reading ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
              (mode == sqlite_open::create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  std::string name = path;
  if (mode == sqlite_open::immutable) {  // a URI: the path's '?', '#' and '%' escaped
    name = "file:";
    for (char ch : path) name += ch == '?' || ch == '#' || ch == '%' ? fmt::format("%{:02X}", ch) : std::string(1, ch);
    name += "?immutable=1";
    flags |= SQLITE_OPEN_URI;
  }
  const int rc = sqlite3_open_v2(name.c_str(), &m_db, flags, nullptr);
  if (rc != SQLITE_OK) {
    const sqlite_error e = error_of(m_db, rc, path, "cannot open");
    sqlite3_close(m_db);
    m_db = nullptr;
    throw e;
  }
  sqlite3_extended_result_codes(m_db, 0);
}

sqlite_connection::~sqlite_connection() {
  if (m_db) sqlite3_close(m_db);
}

sqlite_connection::sqlite_connection(sqlite_connection&& o) noexcept
    : m_db(std::exchange(o.m_db, nullptr)), m_path(std::move(o.m_path)) {}

void sqlite_connection::exec(const std::string& sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string why = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    throw sqlite_error(fmt::format("database '{}': {}", m_path, why), rc & 0xff);
  }
}

int64_t sqlite_connection::last_insert_id() const { return sqlite3_last_insert_rowid(m_db); }

sqlite_transaction::sqlite_transaction(sqlite_connection& c) : m_connection(c) { c.exec("BEGIN IMMEDIATE"); }

sqlite_transaction::~sqlite_transaction() {
  if (m_done) return;
  try {
    m_connection.exec("ROLLBACK");
  } catch (...) {  // a destructor never throws; SQLite rolls back a dead transaction itself
  }
}

void sqlite_transaction::commit() {
  m_connection.exec("COMMIT");
  m_done = true;
}

}  // namespace attn
