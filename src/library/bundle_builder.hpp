#pragma once
// What `attn-tune bundle` puts in a bundle: the kernels a table's configs compile to for one
// architecture (each exact shape, each bucket, and the fallback of every dtype, head dim and
// causality the table holds), compiled through the cache.
#include <string>
#include <vector>

#include "codegen/cache.hpp"
#include "library/bundle.hpp"
#include "library/tuned_table.hpp"

namespace attn {

struct bundle_target {
  const kernel_family* family;
  tile_config config;
  attn::problem shape;  ///< only dtype, head dim and causality reach the kernel
  std::string key;    ///< instantiation_key()
};

/// The distinct kernels the table's entries for `arch`'s compute capability need, in table order;
/// an entry a family rejects on that architecture goes to `skipped` with the reason. Throws
/// invalid_input when the table holds no entry for that compute capability.
std::vector<bundle_target> bundle_targets(const tuned_table& table, const std::string& arch,
                                          std::vector<std::string>& skipped);

/// Compiles the targets (through the cache) into a bundle holding `table`'s text. Throws
/// compile_failure naming the kernel that does not compile.
bundle build_bundle(const tuned_table& table, const std::vector<bundle_target>& targets, const std::string& arch,
                    const compile_cache& cache);

}  // namespace attn
