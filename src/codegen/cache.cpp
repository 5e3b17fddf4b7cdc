#include "codegen/cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <algorithm>

#include "backend/hip/amdgpu_metadata.hpp"
#include "backend/hip/hiprtc.hpp"

#include <fmt/format.h>


namespace fs = std::filesystem;

namespace attn {

uint64_t fnv1a64(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("ATTN_TUNE_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/attn-tune";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/attn-tune";
  return "/tmp/attn-tune-cache";
}

compile_cache::compile_cache(std::string dir, kernel_sources kernels)
    : m_dir(std::move(dir)), m_kernels(std::move(kernels)) {}

std::string compile_cache::key(const std::string& source, const std::string& arch,
                               const std::vector<std::string>& options, backend b) const {
  const bool cuda = b == backend::cuda;
  std::string text = fmt::format("{:016x}\n{} {}\n{}\n{}\n", m_kernels.hash(), cuda ? "nvrtc" : "hiprtc",
                                 cuda ? nvrtc_version() : hiprtc_version(), arch, source);
  for (const auto& o : cuda ? nvrtc_options(arch, options) : hiprtc_options(arch, options)) text += o + '\n';
  return fmt::format("{}-{:016x}", arch, fnv1a64(text));
}

namespace {
std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// Written under a unique temporary name, then renamed: readers never see half a file.
bool write_file_atomic(const fs::path& p, const std::string& data) {
  const fs::path tmp = p.string() + fmt::format(".tmp{}", std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out.write(data.data(), static_cast<std::streamsize>(data.size()))) return false;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  return !ec;
}
}  // namespace

std::optional<compile_result> compile_cache::load(const std::string& key) const {
  if (m_dir.empty()) return std::nullopt;
  auto cubin = read_file(fs::path(m_dir) / (key + ".cubin"));
  auto log = read_file(fs::path(m_dir) / (key + ".log"));
  if (!cubin || !log || cubin->empty()) return std::nullopt;
  compile_result r;
  r.ok = true;
  r.cubin = std::move(*cubin);
  r.log = std::move(*log);
  return r;
}

void compile_cache::store(const std::string& key, const compile_result& result) const {
  if (m_dir.empty() || !result.ok) return;
  std::error_code ec;
  fs::create_directories(m_dir, ec);
  if (ec) return;
  // The log first: a cubin without its log is never found, the reverse is harmless.
  if (write_file_atomic(fs::path(m_dir) / (key + ".log"), result.log))
    write_file_atomic(fs::path(m_dir) / (key + ".cubin"), result.cubin);
}

void read_resources(compile_result& r, backend b) {
  if (b == backend::cuda) {
    const auto report = parse_ptxas_report(r.log);
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
    return {std::move(*hit), true};
  }
  cached_compile out{b == backend::cuda ? compile_cubin(source, arch, options, cache.kernels())
                                        : compile_code_object(source, arch, options, cache.kernels()),
                     false};
  cache.store(k, out.result);
  return out;
}

}  // namespace attn
