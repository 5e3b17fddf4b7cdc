#pragma once
// The library's failures, one type per error code of include/attn_tune/attn_tune.h (bad arguments
// are invalid_input, device calls device_error, as in the tool).
#include <stdexcept>

namespace attn {

/// A tuned table that cannot be read, or one tuned on another device.
struct table_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A bundle that is corrupt, of another format version, architecture or kernel sources.
struct bundle_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A valid problem that no kernel family can run on this device.
struct unsupported_problem : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// NVRTC failed on the chosen kernel.
struct compile_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attn
