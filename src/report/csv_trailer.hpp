#pragma once
// The end line of a results CSV: "#end,rows=N,xxh3=<32 hex digits>", written last, over every
// byte before it. A file cut anywhere (at a row boundary, inside a field) lacks it or fails it,
// so readers refuse it instead of taking a part for the whole.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

/// The end line (with its newline) for `body`, the text before it, which holds `rows` data rows.
std::string csv_trailer(std::string_view body, size_t rows);

struct csv_body {
  std::string_view text;       ///< the file without its end line
  std::optional<size_t> rows;  ///< the row count the end line claims; nullopt: no end line
};

/// Splits `file_text` (of `path`) into body and end line and checks the checksum. Throws
/// invalid_input naming path and the end line's line number when the end line is malformed or
/// the checksum does not match (the file was changed or cut after it was written).
csv_body split_trailer(const std::string& path, std::string_view file_text);

/// 1-based number of the last line of text (0 for an empty text).
size_t last_line_number(std::string_view text);

}  // namespace attn
