#pragma once
// Pieces the kernel families share: fa2 and mfma lay out their tiles alike and are instantiated
// by the same kind of stub.
#include <optional>
#include <string>
#include <vector>

#include "codegen/family.hpp"

namespace attn_k {
struct fwd_params;  // kernels/common/params.cuh
}

namespace attn {

struct launch_plan;  // codegen/launch_plan.hpp

/// Split-KV (splits > 1): checks that p's workspace holds the splits' partials (invalid_input naming
/// the bytes it needs and was given), then points p.o_partial past the counters and p.lse_partial
/// after the partial O (kernels/common/params.cuh's layout).
void point_split_workspace(attn_k::fwd_params& p, const problem& s, int splits);
/// Split-KV's combine kernel after the main one: one block of COMBINE_THREADS per output row
/// (invalid_input when the variant was loaded without it, or the rows exceed the grid).
void plan_combine(launch_plan& plan, const problem& s);
/// The combine kernel's translation-unit text: extern "C" `entry`(`parameter`) running
/// combine_splits over `params` (the fwd_params expression), O's strides its own when own_dv.
std::string combine_stub(const char* entry, const char* parameter, const char* params, const problem& s, bool own_dv);

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
