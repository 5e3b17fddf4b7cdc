// Stand-in for a build without HIP (no libamdhip64-dev): there is no HIP runtime, and
// runtime_for(backend::hip) says so.
#ifndef ATTN_TUNE_HAVE_HIP
#include "backend/runtime.hpp"

namespace attn {

const device_runtime* hip_runtime() { return nullptr; }

}  // namespace attn
#endif
