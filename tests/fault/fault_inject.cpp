// An LD_PRELOAD shim that makes writing fail on demand (issue 20, item 6): while ATTN_FAULT names
// a call (write, fsync or rename; write covers pwrite and pwrite64, fsync covers fdatasync), that
// call fails with ATTN_FAULT_ERRNO (default ENOSPC) for every file whose path holds
// ATTN_FAULT_MATCH (required, so that nothing else the process writes, its test output included,
// is touched). Everything else goes to the C library. No headers that declare the wrapped calls
// are included, so the definitions below need not match their exception specifications.
#include <dlfcn.h>
#include <errno.h>
#include <sys/types.h>

extern "C" {
char* getenv(const char* name) noexcept;
char* strstr(const char* haystack, const char* needle) noexcept;
int strcmp(const char* a, const char* b) noexcept;
int atoi(const char* text) noexcept;
int snprintf(char* out, size_t size, const char* format, ...) noexcept;
ssize_t readlink(const char* path, char* buf, size_t size) noexcept;
}

namespace {

bool armed(const char* call) {
  const char* fault = getenv("ATTN_FAULT");
  return fault && strstr(fault, call) != nullptr && getenv("ATTN_FAULT_MATCH") != nullptr;
}

bool path_matches(const char* path) {
  const char* match = getenv("ATTN_FAULT_MATCH");
  return path && match && *match && strstr(path, match) != nullptr;
}

bool fd_matches(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return path_matches(path);
}

int fault_errno() {
  const char* e = getenv("ATTN_FAULT_ERRNO");
  return e && *e ? atoi(e) : ENOSPC;
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

// Tests look for this to know that the shim is loaded.
int attn_fault_inject_loaded = 1;

ssize_t write(int fd, const void* buf, size_t n) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (armed("write") && fd_matches(fd)) return errno = fault_errno(), -1;
  return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  if (armed("write") && fd_matches(fd)) return errno = fault_errno(), -1;
  return real(fd, buf, n, at);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t at) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite64");
  if (armed("write") && fd_matches(fd)) return errno = fault_errno(), -1;
  return real(fd, buf, n, at);
}

int fsync(int fd) {
  static auto real = next<int (*)(int)>("fsync");
  if (armed("fsync") && fd_matches(fd)) return errno = fault_errno(), -1;
  return real(fd);
}

int fdatasync(int fd) {
  static auto real = next<int (*)(int)>("fdatasync");
  if (armed("fsync") && fd_matches(fd)) return errno = fault_errno(), -1;
  return real(fd);
}

int rename(const char* from, const char* to) {
  static auto real = next<int (*)(const char*, const char*)>("rename");
  if (armed("rename") && (path_matches(from) || path_matches(to))) return errno = fault_errno(), -1;
  return real(from, to);
}

}  // extern "C"
