#pragma once
// Where the kernel cache and the database go without a home folder: a folder of the temporary
// directory that only this user may use. /tmp is shared, so another user could have made the
// folder first, or planted links in it; such a folder is refused, never used.
#include <string>
#include <sys/types.h>

namespace attn {

/// "$TMPDIR/attn-tune-cache-<uid>" ("/tmp/..." without TMPDIR): the defaults' folder without HOME.
std::string temp_cache_dir();

/// Makes `path` a folder of mode 0700 when it is missing. Throws invalid_input naming it when it is
/// a symbolic link, not a folder, or owned by another user than `owner`; a folder of `owner` that
/// others may enter is made 0700.
void ensure_private_dir(const std::string& path, uid_t owner);

}  // namespace attn
