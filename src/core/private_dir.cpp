#include "core/private_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/problem.hpp"  // invalid_input

namespace attn {

std::string temp_cache_dir() {
  const char* tmp = std::getenv("TMPDIR");
  return fmt::format("{}/attn-tune-cache-{}", tmp && *tmp ? tmp : "/tmp", ::geteuid());
}

void ensure_private_dir(const std::string& path, uid_t owner) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw invalid_input(fmt::format("cannot make the folder '{}': {}", path, std::strerror(errno)));
  auto refuse = [&](const std::string& why) {
    return invalid_input(fmt::format("the folder '{}' {}: it is not used (another user could have put files "
                                     "there); set HOME, or ATTN_TUNE_CACHE_DIR and ATTN_TUNE_DB, to folders of yours",
                                     path, why));
  };
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw refuse(fmt::format("cannot be read ({})", std::strerror(errno)));
  if (S_ISLNK(st.st_mode)) throw refuse("is a symbolic link");
  if (!S_ISDIR(st.st_mode)) throw refuse("is not a folder");
  if (st.st_uid != owner) throw refuse(fmt::format("belongs to user {}, not to user {}", st.st_uid, owner));
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0)
    throw refuse(fmt::format("is open to others and cannot be made private ({})", std::strerror(errno)));
}

}  // namespace attn
