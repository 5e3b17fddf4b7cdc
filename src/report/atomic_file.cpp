#include "report/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "core/problem.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

std::runtime_error write_error(const std::string& path, const std::string& why) {
  return std::runtime_error(fmt::format("cannot write '{}': {}", path, why));
}

// A directory where a file is to go is the user's mistake (exit 2), not a failure of the machine.
invalid_input is_a_directory(const std::string& path) {
  return invalid_input(fmt::format("cannot write '{}': it is a directory (name a file in it)", path));
}

// "<dir>/.<name>.<what>-XXXXXX" for mkstemp, beside the target. The name is cut so that the whole
// stays within the file system's limit on a name: a legal 250-byte name gets a legal temporary one.
std::string sibling_pattern(const fs::path& target, const std::string& what) {
  const std::string suffix = "." + what + "-XXXXXX";
  const long limit = ::pathconf(target.parent_path().empty() ? "." : target.parent_path().c_str(), _PC_NAME_MAX);
  const size_t room = static_cast<size_t>(limit > 0 ? limit : 255) - 1 - suffix.size();
  std::string name = ".";
  name += target.filename().string().substr(0, room);
  return (target.parent_path() / (name + suffix)).string();
}

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

// The path that is written: a symbolic link's target (so the link survives), else path itself.
fs::path resolve(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p;
}

void create_parent(const std::string& path, const fs::path& target) {
  const fs::path parent = target.parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw write_error(path, fmt::format("cannot create directory '{}': {}", parent.string(), ec.message()));
}

// Writes all of text to fd; false (errno set) on failure.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The mode a new file gets (0666 less the umask), as open(2) would give it; mkstemp uses 0600.
mode_t new_file_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

// Exists (through any links, /proc's magic ones included: stat follows them) and is neither a
// regular file nor a directory: a FIFO, a device, a socket, /dev/stdout on a pipe.
bool is_special(const fs::path& p) {
  // An open descriptor's name (/dev/stdout, /dev/fd/N, /proc/self/fd/N) is written in place even
  // when it is a regular file: a shell's `> log` must keep getting what is written there.
  for (const char* prefix : {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"})
    if (p.string().rfind(prefix, 0) == 0) return true;
  std::error_code ec;
  const auto st = fs::status(p, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

void write_in_place(const std::string& path, const fs::path& target, std::string_view text) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw write_error(path, errno_text(errno));
  const bool ok = write_all(fd, text);
  const int e = errno;
  ::close(fd);
  if (!ok) throw write_error(path, errno_text(e));
}

void replace_file(const std::string& path, const fs::path& target, std::string_view text) {
  create_parent(path, target);
  // A unique name beside the target (same file system, so the rename is atomic): concurrent
  // writers never share a temporary file, and mkstemp's O_EXCL follows no link planted there.
  std::string tmp = sibling_pattern(target, "tmp");
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw write_error(path, fmt::format("cannot create a temporary file beside it: {}", errno_text(errno)));
  auto fail = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return write_error(path, fmt::format("{} '{}': {}", what, tmp, errno_text(e)));
  };
  struct stat old {};
  const mode_t mode = ::lstat(target.c_str(), &old) == 0 ? (old.st_mode & 07777) : new_file_mode();
  if (::fchmod(fd, mode) != 0) throw fail("setting the mode of", errno);
  if (!write_all(fd, text)) throw fail("writing", errno);
  if (::fsync(fd) != 0) throw fail("flushing", errno);
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw write_error(path, fmt::format("closing '{}': {}", tmp, errno_text(e)));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw write_error(path, errno_text(e));
  }
}

// The original standard output after reserve_stdout_for_data(), else STDOUT_FILENO.
int g_data_stdout = STDOUT_FILENO;

}  // namespace

void reserve_stdout_for_data() {
  if (g_data_stdout != STDOUT_FILENO) return;
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  if (saved < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return;
  g_data_stdout = saved;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  if (path == "-") {
    std::fflush(stdout);
    if (!write_all(g_data_stdout, text)) throw write_error("-", errno_text(errno));
    return;
  }
  if (is_special(path)) return write_in_place(path, path, text);  // before resolving: /dev/stdout's link
  const fs::path target = resolve(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw is_a_directory(path);
  if (is_special(target)) return write_in_place(path, target, text);
  replace_file(path, target, text);
}

void replace_file_atomically(const std::string& path, std::string_view text) {
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(path, ec))) throw is_a_directory(path);
  replace_file(path, path, text);
}


void check_writable(const std::string& path) {
  if (path == "-") return;
  if (is_special(path)) {
    if (::access(path.c_str(), W_OK) != 0) throw write_error(path, errno_text(errno));
    return;
  }
  const fs::path target = resolve(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw is_a_directory(path);
  create_parent(path, target);
  // What write_file_atomically needs: a new file in the folder (the target itself is untouched).
  std::string probe = sibling_pattern(target, "probe");
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw write_error(path, errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

bool is_existing_file(const std::string& path) {
  if (path == "-") return false;
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty() || a == "-" || b == "-") return false;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  const fs::path x = fs::weakly_canonical(a, ec), y = fs::weakly_canonical(b, ec);
  return !ec && x == y;
}

void refuse_overwrite(const std::string& path, bool force, const std::string& how) {
  if (!force && is_existing_file(path)) throw invalid_input(fmt::format("'{}' exists: {}", path, how));
}

}  // namespace attn
