#pragma once
// On-disk cache of compiled cubins, keyed by everything that determines the binary: the kernel
// sources NVRTC sees, the instantiation, the options, the NVRTC version and the architecture.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/nvrtc.hpp"
#include "codegen/family.hpp"

namespace attn {

/// 64-bit FNV-1a; stable across runs and machines.
uint64_t fnv1a64(const std::string& text, uint64_t seed = 1469598103934665603ULL);

/// Default: $ATTN_TUNE_CACHE_DIR, else $XDG_CACHE_HOME/attn-tune, else ~/.cache/attn-tune.
std::string default_cache_dir();

class compile_cache {
 public:
  /// An empty dir disables the cache.
  explicit compile_cache(std::string dir, kernel_sources kernels = kernel_sources::embedded());
  std::string key(const std::string& source, const std::string& arch,
                  const std::vector<std::string>& options, backend b = backend::cuda) const;
  /// The binary and its log; the resource report is for the caller to read (by backend).
  std::optional<compile_result> load(const std::string& key) const;
  /// Best effort: a cache that cannot be written only costs a recompile next time.
  void store(const std::string& key, const compile_result& result) const;
  const std::string& dir() const { return m_dir; }
  const kernel_sources& kernels() const { return m_kernels; }

 private:
  std::string m_dir;
  kernel_sources m_kernels;
};

/// Compiles through the cache: a hit costs no compile (milliseconds = 0, cached = true).
struct cached_compile {
  compile_result result;
  bool cached = false;
};
/// Registers, spills and stack of a compiled binary: ptxas's report in the log (CUDA) or the
/// code object's metadata (HIP).
void read_resources(compile_result& r, backend b);

/// NVRTC for backend::cuda, hiprtc for backend::hip.
cached_compile compile_with_cache(const compile_cache& cache, const std::string& source,
                                  const std::string& arch, const std::vector<std::string>& options,
                                  backend b = backend::cuda);

}  // namespace attn
