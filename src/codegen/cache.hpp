#pragma once
// On-disk cache of compiled cubins, keyed by everything that determines the binary: the kernel
// sources NVRTC sees, the instantiation, the options, the NVRTC version and the architecture
// (XXH3-128 of all of it). Each entry is one file carrying its key and the XXH3-128 checksum of
// both (codegen/cache_entry.hpp): a damaged entry, or another key's, is compiled again, with a
// warning.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/nvrtc.hpp"
#include "codegen/family.hpp"
#include "core/warning.hpp"

namespace attn {

/// Default: $ATTN_TUNE_CACHE_DIR, else $XDG_CACHE_HOME/attn-tune, else ~/.cache/attn-tune, else
/// (no HOME) temp_cache_dir(), a folder of this user's alone (core/private_dir.hpp).
std::string default_cache_dir();

class compile_cache {
 public:
  /// An empty dir disables the cache. Entries are read and written without following links
  /// planted in it. temp_cache_dir() is made private first (invalid_input when another user's).
  /// `warn` takes what the cache says (damaged entries, a folder it cannot write).
  explicit compile_cache(std::string dir, kernel_sources kernels = kernel_sources::embedded(),
                         warning_sink warn = print_warning);
  /// "<arch>-<32 hex digits>": XXH3-128 of the kernel sources, compiler and version, arch,
  /// instantiation and options.
  std::string key(const std::string& source, const std::string& arch,
                  const std::vector<std::string>& options, backend b = backend::cuda) const;
  /// The binary and its log; the resource report is for the caller to read (by backend). A
  /// missing entry is nullopt; so is a damaged one (wrong checksum, cut short, junk), after a
  /// warning on stderr naming it.
  std::optional<compile_result> load(const std::string& key) const;
  /// Best effort: a cache that cannot be written only costs a recompile next time, and is said
  /// once (per cache) on stderr with the reason.
  void store(const std::string& key, const compile_result& result) const;
  /// The file of an entry (tests damage it).
  std::string entry_path(const std::string& key) const;
  const std::string& dir() const { return m_dir; }
  const kernel_sources& kernels() const { return m_kernels; }
  void warn(const std::string& line) const { m_warn(line); }
  /// Whether this cache said its note on entries without ptxas's report (said once).
  std::atomic<bool>* said_reportless() const { return m_said_reportless.get(); }

 private:
  std::string m_dir;
  kernel_sources m_kernels;
  std::string m_sources_digest;  ///< XXH3-128 of every kernel file's name and text
  warning_sink m_warn;
  std::shared_ptr<std::atomic<bool>> m_said_unwritable = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<bool>> m_said_reportless = std::make_shared<std::atomic<bool>>(false);
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
