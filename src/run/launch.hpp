#pragma once
// A compiled variant loaded for launching, and one launch of it on a problem: grid (query
// blocks, heads, batch), the family's threads per block and its dynamic shared memory.
#include <string>

#include "codegen/family.hpp"
#include "report/record.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

struct loaded_variant {
  const kernel_family* family;
  loaded_module module;
  kernel_t kernel = nullptr;
};

/// Loads `image` (r's family, compiled for this device), finds the family's entry point and
/// raises its dynamic shared memory limit where the family needs it. Throws device_error.
loaded_variant load_variant(const device_runtime& rt, const std::string& image, const record& r, int device);

void launch_variant(const device_runtime& rt, const loaded_variant& v, const record& r, const problem& pr,
                    stream_t stream);

}  // namespace attn
