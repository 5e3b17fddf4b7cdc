#pragma once
// One run over its kernel families: each family the device runs is tuned (or compiled) with its
// own space, the results merged into one ranking, and a variant that kills the device context is
// re-run with the others it left in fresh attn-tune processes, so one bad variant never ends a run.
#include <string>
#include <vector>

#include "backend/runtime.hpp"
#include "codegen/cache.hpp"
#include "run/tuner.hpp"

namespace attn {

/// What a run searches beyond one family's tune_options: its families with their spaces, and the
/// kernel sources and cache a child process is given too.
struct family_run {
  std::vector<std::string> families;
  std::vector<search_space> spaces;  ///< one per family
  bool families_defaulted = false;   ///< no --family: a family that supersedes the others runs alone
  std::string cache_dir;             ///< "" = no cache
  std::string kernels_dir;           ///< "" = the embedded kernel sources
};

/// The arguments (after the program's name) of a fresh attn-tune process that runs `configs` (their
/// names: forward configs', or backward variants' for pass bwd) of
/// `family` on problem s, with t's timing and timeout, the run's cache and kernels, and writes
/// their records to csv: the isolated re-run after a variant lost the device context.
std::vector<std::string> child_arguments(const family_run& run, const tune_options& t, const std::string& family,
                                         const problem& s, const std::vector<std::string>& configs, uint64_t seed,
                                         int device, const std::string& csv);

/// tune(), and when a variant kills the device context beyond repair in this process, the
/// variants it left are re-run in fresh processes. Once the context is dead, later shapes of this
/// process are tuned in child processes too.
tune_result tune_recovering(const family_run& run, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                            const tune_options& t, bool& context_dead);

/// Every family of the run that the device can run, each through tune_recovering, as one
/// result: all records, ranked together, one best.
tune_result tune_families(const family_run& run, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                          tune_options t, bool& context_dead);
/// The same for --compile-only: the families that can run on `arch`, compiled for it.
tune_result compile_families(const family_run& run, const std::string& arch, const problem& s,
                             const compile_cache& cache, tune_options t);
/// The families a run of `s` on a device of this capability searches first ("hopper" on an H200
/// with the default families, fa2 for decode and KV caches), comma-separated, for the run's header;
/// when the first choice refuses the problem (a head dim, a window it lacks), those that take it,
/// then the refusals in parentheses: "fa2 (family hopper needs a head dim that is ...)".
std::string searched_families(const family_run& run, int cc_major, int cc_minor, const problem& s);

}  // namespace attn
