#include "codegen/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "backend/hip/amdgpu_metadata.hpp"
#include "codegen/hiprtc.hpp"
#include "codegen/cache_entry.hpp"
#include "core/digest.hpp"
#include "core/private_dir.hpp"
#include "report/atomic_file.hpp"

#include <fmt/format.h>


namespace fs = std::filesystem;

namespace attn {

std::string default_cache_dir() {
  if (const char* d = std::getenv("ATTN_TUNE_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/attn-tune";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/attn-tune";
  return temp_cache_dir();
}

compile_cache::compile_cache(std::string dir, kernel_sources kernels, warning_sink warn)
    : m_dir(std::move(dir)), m_kernels(std::move(kernels)), m_warn(std::move(warn)) {
  if (!m_dir.empty() && m_dir == temp_cache_dir()) ensure_private_dir(m_dir, ::geteuid());
  std::string all;
  for (const auto& f : m_kernels.files()) all += f.name + '\0' + f.text + '\0';
  m_sources_digest = xxh3_128_hex(all);
}

std::string compile_cache::key(const std::string& source, const std::string& arch,
                               const std::vector<std::string>& options, backend b) const {
  const bool cuda = b == backend::cuda;
  std::string text = fmt::format("{}\n{} {}\n{}\n{}\n", m_sources_digest, cuda ? "nvrtc" : "hiprtc",
                                 cuda ? nvrtc_version() : hiprtc_version(), arch, source);
  for (const auto& o : cuda ? nvrtc_options(arch, options) : hiprtc_options(arch, options)) text += o + '\n';
  return fmt::format("{}-{}", arch, xxh3_128_hex(text));
}

namespace {

constexpr off_t max_entry_bytes = off_t{1} << 30;

// An entry's bytes, read without following a link (one planted in the cache would make it read,
// and then write, a file elsewhere) and only from a regular file (a FIFO would hang the read).
// nullopt when there is none; `why` set when something else is there.
std::optional<std::string> read_entry(const std::string& path, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) why = "a symbolic link";
    return std::nullopt;
  }
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_size > max_entry_bytes) why = fmt::format("{} bytes, more than an entry holds", st.st_size);
  else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    for (ssize_t n; got < bytes.size() && (n = ::read(fd, bytes.data() + got, bytes.size() - got)) > 0;)
      got += static_cast<size_t>(n);
    bytes.resize(got);
  }
  ::close(fd);
  if (!why.empty()) return std::nullopt;
  return bytes;
}

}  // namespace

std::string compile_cache::entry_path(const std::string& key) const {
  return (fs::path(m_dir) / (key + ".entry")).string();
}

std::optional<compile_result> compile_cache::load(const std::string& key) const {
  if (m_dir.empty()) return std::nullopt;
  const std::string path = entry_path(key);
  std::string why;
  const auto bytes = read_entry(path, why);
  if (!bytes && why.empty()) return std::nullopt;
  if (bytes && is_older_cache_entry(*bytes)) return std::nullopt;  // compiled again and replaced
  auto entry = bytes ? decode_cache_entry(*bytes, key, why) : std::nullopt;
  if (!entry) {
    warn(fmt::format("warning: cache entry '{}' is damaged ({}): compiling it again", path, why));
    return std::nullopt;
  }
  compile_result r;
  r.ok = true;
  r.cubin = std::move(entry->binary);
  r.log = std::move(entry->log);
  return r;
}

void compile_cache::store(const std::string& key, const compile_result& result) const {
  if (m_dir.empty() || !result.ok) return;
  try {
    replace_file_atomically(entry_path(key), encode_cache_entry(key, {result.cubin, result.log}));
  } catch (const std::exception& e) {
    if (!m_said_unwritable->exchange(true))
      warn(fmt::format("warning: the compile cache '{}' cannot be written ({}): every run compiles again; give "
                       "--cache-dir a writable folder, or --no-cache",
                       m_dir, e.what()));
  }
}

void read_resources(compile_result& r, backend b) {
  if (b == backend::cuda) {
    const auto report = cuda_resources(r.log, r.cubin);
    r.registers = report.registers;
    r.spill_bytes = report.spill_bytes;
    r.stack_bytes = report.stack_bytes;
  } else {
    const auto report = parse_amdgpu_resources(r.cubin);
    r.registers = std::max(0, report.vgprs);  // gfx90a: the unified file, AGPRs included
    r.spill_bytes = 4 * (std::max(0, report.vgpr_spills) + std::max(0, report.sgpr_spills));
    r.stack_bytes = std::max(0, report.scratch_bytes);
  }
}

cached_compile compile_with_cache(const compile_cache& cache, const std::string& source,
                                  const std::string& arch, const std::vector<std::string>& options, backend b) {
  const std::string k = cache.key(source, arch, options, b);
  if (auto hit = cache.load(k)) {
    read_resources(*hit, b);
    if (b == backend::hip) return {std::move(*hit), true};
    // An entry written while the driver's compute cache answered ptxas has no report in its log.
    // With that cache off in this process (attn-tune's default) compiling again brings the report
    // (spills, "Potential Performance Loss") back; with it on, the cubin's numbers serve (spills
    // then read 0). An entry with no register count at all cannot be trusted.
    const bool reported = parse_ptxas_report(hit->log).registers > 0;
    const char* off = std::getenv("CUDA_CACHE_DISABLE");
    const bool driver_cache_off = off && std::string(off) == "1";
    if (hit->registers > 0 && (reported || !driver_cache_off)) return {std::move(*hit), true};
    if (!cache.said_reportless()->exchange(true))
      cache.warn(fmt::format("note: cache entries without ptxas's report (written while the CUDA driver's compute "
                             "cache answered NVRTC) are compiled again, e.g. '{}'",
                             cache.entry_path(k)));
  }
  cached_compile out{b == backend::cuda ? compile_cubin(source, arch, options, cache.kernels())
                                        : compile_code_object(source, arch, options, cache.kernels()),
                     false};
  cache.store(k, out.result);
  return out;
}

}  // namespace attn
