#pragma once
// What makes two tunings the same question: the device, each family's kernel sources, the shape,
// and the space searched (and how). A pure function of them.
#include <string>
#include <vector>

#include "codegen/kernel_sources.hpp"
#include "db/tuned_db.hpp"
#include "core/config.hpp"
#include "core/input_kind.hpp"
#include "run/search.hpp"

namespace attn {

struct searched_space {
  std::vector<std::string> families;
  std::vector<search_space> spaces;  ///< one per family
  std::vector<std::string> configs;  ///< --configs, when given (one family)
  search_kind search = search_kind::screen;
  int samples = 0;    ///< --search random
  uint64_t seed = 0;  ///< --search random draws with it
  input_kind inputs = input_kind::normal;  ///< what the variants were checked on
  attn::objective objective = objective::time;  ///< what the best was chosen by
  timing_regime regime = timing_regime::burst;  ///< how the full measurements met the GPU
};

/// "fa2: block_m=64,128,256 block_n=32,64,128 warps=4,8 stages=1,2,3,4" per family, after the
/// search ("screen; ..."; "random 32 seed 7; ..."), or the --configs; then "; inputs wide" (or
/// sink) when the inputs were not standard normal, so such a tuning is never answered by one
/// checked on normal inputs, nor the other way round (entries from before --inputs were normal);
/// then "; objective energy" when the best was chosen by energy (entries before it were by time),
/// and "; regime sustained" when the full measurements waited for the clock (before: burst).
std::string describe_space(const searched_space& s);

/// "fa2=0123456789abcdef,wgmma=..." from each family's own source files.
std::string kernel_hashes(const std::vector<std::string>& families, const kernel_sources& sources);

tuning_key make_tuning_key(const device_desc& device, const problem& s, const searched_space& space,
                           const kernel_sources& sources);

}  // namespace attn
