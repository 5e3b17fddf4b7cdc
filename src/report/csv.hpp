#pragma once
// Results as CSV: one row per variant. Written atomically (temporary file + rename), read back
// with fast-cpp-csv-parser.
#include <string>
#include <vector>

#include "report/record.hpp"

namespace attn {

/// Column names, in order. The first is "schema_version".
const std::vector<std::string>& csv_columns();
/// One CSV line (no newline) for r; text fields quoted when they hold ',', '"' or leading or
/// trailing blanks. Newlines in text are written as spaces (the reader is line-based).
std::string csv_row(const record& r);
/// Writes header + rows to `path` via `path.tmp` and rename. Creates parent directories.
/// Throws std::runtime_error naming the path when it cannot be written.
void write_csv(const std::string& path, const std::vector<record>& rows);
/// Throws std::runtime_error naming the file (and line) on a missing file, wrong header,
/// unknown schema version or bad field.
std::vector<record> read_csv(const std::string& path);
/// The same for CSV text held in memory (a database entry); `origin` names it in errors.
std::vector<record> read_csv_text(const std::string& text, const std::string& origin);
/// Header + rows, as write_csv writes them.
std::string csv_text(const std::vector<record>& rows);
/// Checks that `path` can be written (creating parent directories) without leaving a file
/// behind; throws std::runtime_error naming the path if not.
void check_writable(const std::string& path);

}  // namespace attn
