#pragma once
// Pieces the kernel families share: fa2 and mfma lay out their tiles alike and are instantiated
// by the same kind of stub.
#include <optional>
#include <string>
#include <vector>

#include "codegen/family.hpp"

namespace attn {

/// Q tile plus `stages` K and V tiles in shared memory / LDS, rows padded by 8 elements.
int64_t padded_tiles_bytes(const tile_config& c, const problem& s);

/// Why block_m cannot be split into whole 16-row matrix tiles over c.warps groups, or block_n
/// into 16-column steps; `groups` / `tiles` name them ("warps"/"mma", "wavefronts"/"MFMA").
std::optional<std::string> tiling_reason(const tile_config& c, const char* groups, const char* tiles);

/// A family's source_files: its root kernel files and everything they include (the embedded
/// kernels' include closure), so an edit to any file the family compiles changes its hash.
std::vector<std::string> family_sources(const std::vector<std::string>& roots);

/// `#include "<header>"` and an extern "C" `entry` that runs forward<config<...>>(p), declared
/// with __launch_bounds__(threads[, min_blocks]) and then `attributes` (when not empty);
/// `extra_args` (when not empty) follow the config's seven template arguments.
std::string instantiation_stub(const char* header, const char* entry, const char* forward, const char* config,
                               int threads, const tile_config& c, const problem& s, int min_blocks = 0,
                               const std::string& attributes = "", const std::string& extra_args = "");

}  // namespace attn
