#include "core/device.hpp"

namespace attn {

std::string to_string(backend b) { return b == backend::cuda ? "cuda" : "hip"; }

}  // namespace attn
