#pragma once
// A bundle (.attnb): a tuned table and the cubins of its configs for one architecture, in one
// versioned, checksummed file, so a service starts without NVRTC. Layout (text lines, binary
// payloads of the stated sizes):
//   ATTNB <format version>\n  arch <arch>\n  version <attn-tune version>\n
//   sources <family>=<hash of its kernels/ files> ...\n
//   table <bytes>\n<table text>\n
//   kernel <family> <instantiation key> <config> <shared memory bytes> <bytes>\n<cubin>\n   (repeated)
//   checksum <XXH3-128 of every byte before this line, 32 hex digits>\n
// Format 1 (FNV-1a 64 checksums and kernel names) is refused: rebuild such a bundle.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/family.hpp"
#include "codegen/kernel_sources.hpp"

namespace attn {

constexpr int bundle_format_version = 2;

struct bundle_kernel {
  std::string family;
  std::string key;  ///< instantiation_key(): which (config, dtype, D, causal) it was built for
  std::string config;
  int64_t shared_memory_bytes = 0;
  std::string cubin;
};

struct bundle {
  std::string arch;
  std::string version;
  std::map<std::string, std::string> source_hashes;  ///< family -> hash of its kernels/ sources
  std::string table;                                 ///< the tuned table's text
  std::vector<bundle_kernel> kernels;
  const bundle_kernel* find(const std::string& family, const std::string& key) const;
};

/// Names the kernel a (family, config, shape) compiles to: a hash of its instantiation source.
std::string instantiation_key(const kernel_family& f, const tile_config& c, const problem& s);
/// Whether `bytes` start like a bundle (so a table path may name one).
bool looks_like_bundle(const std::string& bytes);

std::string serialize_bundle(const bundle& b);
/// Throws bundle_error naming `what`: not a bundle, another format version, a checksum that does
/// not match (corrupt or truncated), or a malformed section.
bundle parse_bundle(const std::string& bytes, const std::string& what);
/// Throws bundle_error when the bundle is for another architecture than the device's, or was
/// built from other kernel sources than `kernels` (its cubins would not match this library).
void check_bundle_target(const bundle& b, const std::string& device_arch, const kernel_sources& kernels,
                         const std::string& what);

}  // namespace attn
