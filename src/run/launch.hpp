#pragma once
// A compiled variant loaded for launching, and its launches on one problem. The plan is made once
// per (variant, problem): the family's parameter (fwd_params, or a family's own built from it),
// grid, threads and dynamic shared memory; each launch then only enqueues.
#include <string>

#include "codegen/family.hpp"
#include "codegen/launch_plan.hpp"
#include "core/record.hpp"
#include "verify/gpu_reference.hpp"

namespace attn {

struct loaded_variant {
  const kernel_family* family;
  loaded_module module;
  kernel_t kernel = nullptr;
  kernel_t combine = nullptr;  ///< split-KV's combine step, when the config splits
};

/// Loads `image` (r's family, compiled for this device), finds the family's entry point and
/// raises its dynamic shared memory limit where the family needs it. Throws device_error.
loaded_variant load_variant(const device_runtime& rt, const std::string& image, const record& r, int device);

/// The default: fwd_params, one block per BLOCK_M query rows of each (head, batch); or the
/// family's own plan_launch. Throws invalid_input (a tensor the family cannot describe) or
/// device_error.
/// Grows pr's split-KV workspace to what the config needs.
launch_plan plan_launch(const loaded_variant& v, const record& r, const device_problem& pr, const gpu_info& gpu);
/// The same for tensors the caller owns: `params` (make_fwd_params) holds their pointers and strides.
launch_plan plan_launch(const loaded_variant& v, const record& r, const problem& s, const attn_k::fwd_params& params,
                        const gpu_info& gpu);
void launch(const device_runtime& rt, const launch_plan& plan, stream_t stream);

}  // namespace attn
