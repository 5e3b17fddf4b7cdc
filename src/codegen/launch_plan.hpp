#pragma once
// How one compiled variant is launched on one problem: the grid, the threads, the dynamic shared
// memory and its one kernel parameter, an argument block the family fills (fwd_params, or a
// family's own struct) and the generic launcher passes on without knowing what it is.
#include <memory>
#include <utility>

#include "backend/runtime.hpp"

namespace attn {

struct launch_plan {
  kernel_t kernel = nullptr;
  dims3 grid, block;
  int shared_bytes = 0;
  std::shared_ptr<const void> argument;  ///< the kernel's one parameter, copied at launch
  /// Split-KV's combine step, launched after the kernel with the same argument (nullptr: none).
  kernel_t combine = nullptr;
  dims3 combine_grid, combine_block;
  /// The combine as the kernel's programmatic dependent (device_runtime::launch_dependent): set
  /// where the device has it (sm_90 and up), decided once when the plan is made.
  bool combine_dependent = false;

  template <class T>
  void set_argument(T value) {
    argument = std::make_shared<const T>(std::move(value));
  }
};

}  // namespace attn
