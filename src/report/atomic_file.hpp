#pragma once
// Every file attn-tune writes (results CSVs, best tables, exports, check's reports, cache
// entries) goes through here, so none is ever seen half-written and nothing but the target is
// ever replaced.
#include <string>
#include <string_view>

#include "core/problem.hpp"  // invalid_input

namespace attn {

/// Writes `text` to `path`:
///  - "-": standard output;
///  - a path that exists and is not a regular file (a FIFO, a character device such as
///    /dev/null): written in place, never replaced;
///  - a symbolic link: followed, so its target is written and the link stays;
///  - otherwise: a unique temporary file in the target's folder (mkstemp), written, fsync'd and
///    renamed over the target; removed again on every error path. Its name is kept within the
///    file system's limit on a name, however long the target's is.
/// Parent directories are created. Throws std::runtime_error "cannot write 'path': <reason>", or
/// invalid_input when `path` is a directory.
void write_file_atomically(const std::string& path, std::string_view text);

/// The same without following anything at `path`: a symbolic link, FIFO or device there is
/// replaced by the new file, never written through (a folder others may plant entries in: the
/// kernel cache).
void replace_file_atomically(const std::string& path, std::string_view text);

/// For a command whose data goes to standard output ("-"): from here on what the process prints
/// on stdout (tables, progress) goes to stderr, and write_file_atomically("-", ...) alone writes
/// to the original standard output. Idempotent.
void reserve_stdout_for_data();

/// Checks that write_file_atomically(path, ...) can succeed (creating parent directories), without
/// touching the target or leaving a file behind; throws std::runtime_error naming path and why
/// (invalid_input for a directory).
void check_writable(const std::string& path);

/// True when `path` (after following symbolic links) is an existing regular file: what writing
/// it would replace. False for "-", FIFOs and devices.
bool is_existing_file(const std::string& path);

/// True when a and b name the same file (after links): the same existing file, or, when either is
/// missing, the same path once made absolute. False for "-" and "".
bool same_file(const std::string& a, const std::string& b);

/// Refuses (invalid_input) to replace an existing regular file `path` unless `force`: "'path'
/// exists: <how>" where `how` says which option keeps or overwrites it.
void refuse_overwrite(const std::string& path, bool force, const std::string& how);

}  // namespace attn
