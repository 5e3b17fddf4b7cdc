#pragma once
// Turns a search space into compiled variants: prune what cannot run (pure resource model),
// then compile the rest in parallel through the cache. One variant's failure is its record.
#include <functional>
#include <string>
#include <vector>

#include "codegen/cache.hpp"
#include "codegen/family.hpp"
#include "core/record.hpp"

namespace attn {

struct variant {
  record rec;          ///< status pruned / compile_error / compiled
  std::string cubin;   ///< when compiled
};

/// Progress: (done, total, cached so far).
using compile_progress = std::function<void(int, int, int)>;
/// Each variant as soon as it is compiled (pruned ones are not): its record and the compiler's
/// whole log (empty for a config whose instantiation another one compiled).
using compiled_variant = std::function<void(const record&, const std::string& log)>;

/// Opt-in shared memory per block of a known architecture, for --compile-only.
resource_limits limits_for_arch(const std::string& arch);

/// What a variant's source is compiled for.
struct compile_target {
  std::string arch;
  std::vector<std::string> options;
  attn::backend backend = backend::cuda;
};
/// Compiles out[i] from sources[i] for each i of to_compile on `jobs` threads (0 = all cores),
/// through the cache; equal sources compile once. Each record gets its status (compiled or
/// compile_error with the log), registers, spills and compile time, and its cubin. `compiled` is
/// called before `progress`, one call at a time.
void compile_variants(std::vector<variant>& out, std::vector<size_t> to_compile, const std::vector<std::string>& sources,
                      const compile_target& target, const compile_cache& cache, int jobs,
                      const compile_progress& progress, const compiled_variant& compiled = {});

/// Records of pruned configs carry the reason; the rest are compiled on `jobs` threads
/// (0 = all cores). The order of the result follows `configs`. `compiled` is called before
/// `progress`, one call at a time.
std::vector<variant> build_variants(const kernel_family& family, const problem& s,
                                    const std::vector<tile_config>& configs, const device_desc& device,
                                    const resource_limits& limits, const compile_cache& cache,
                                    int jobs, const compile_progress& progress,
                                    const compiled_variant& compiled = {});

/// "40 to compile, 8 pruned: 6 shared memory exceeds..., 2 block_m ... not whole mma tiles".
std::string pruning_summary(const std::vector<variant>& variants);

}  // namespace attn
