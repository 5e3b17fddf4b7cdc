#pragma once
// What a run knows of a device before it has one: which vendor's runtime drives it and what a
// block may use there (the pruning's limits, from the device or from --arch).
#include <cstdint>
#include <string>

namespace attn {

struct resource_limits {
  int64_t shared_memory_per_block = 227 * 1024;  ///< opt-in maximum of the device
  int max_threads_per_block = 1024;
  int cc_major = 9, cc_minor = 0;
};

enum class backend { cuda, hip };
std::string to_string(backend b);  ///< "cuda" / "hip"

}  // namespace attn
