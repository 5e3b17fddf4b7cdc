#pragma once
// Results as CSV: one row per variant and a last "#end" line with the row count and checksum
// (report/csv_trailer.hpp). Written atomically (report/atomic_file.hpp), read back with
// fast-cpp-csv-parser.
#include <string>
#include <vector>

#include "report/atomic_file.hpp"
#include "core/record.hpp"
#include "core/warning.hpp"

namespace attn {

/// Column names, in order. The first is "schema_version".
const std::vector<std::string>& csv_columns();
/// text as one CSV field: quoted (quotes doubled) when it holds ',' or '"' or edge blanks, or
/// always when `always_quote`; line breaks become spaces. Every CSV attn-tune writes uses it.
std::string csv_field(const std::string& text, bool always_quote = false);
/// One CSV line (no newline) for r; text fields quoted when they hold ',', '"' or leading or
/// trailing blanks. Newlines in text are written as spaces (the reader is line-based).
std::string csv_row(const record& r);
/// Writes header, rows and the end line to `path` (write_file_atomically: "-" is stdout). Throws
/// std::runtime_error naming the path when it cannot be written.
void write_csv(const std::string& path, const std::vector<record>& rows);
/// Throws invalid_input naming the file (and line) on a missing file, wrong header, unknown
/// schema version, bad field, or a file cut short (no or a failing end line; a file of
/// csv_schema_version_without_end_line without one is read with a warning on stderr).
std::vector<record> read_csv(const std::string& path);
/// read_csv for a whole file's text already in memory (a table a library was given, a bundle's
/// table): the same checks, end line included; `path` names it in errors, `warn` takes the
/// warning read_csv prints.
std::vector<record> read_csv_file_text(const std::string& file_text, const std::string& path,
                                       const warning_sink& warn);
/// The same for CSV text held in memory (a database entry); `origin` names it in errors.
std::vector<record> read_csv_text(const std::string& text, const std::string& origin);
/// Header + rows, as write_csv writes them.
std::string csv_text(const std::vector<record>& rows);
/// The whole file write_csv writes: csv_text and its end line.
std::string csv_file_text(const std::vector<record>& rows);

}  // namespace attn
