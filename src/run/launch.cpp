#include "run/launch.hpp"

#include "codegen/kernel_args.hpp"

namespace attn {

namespace {

// The CUDA families size their `extern __shared__` memory at launch; the HIP ones declare their
// LDS statically, so their launches ask for no dynamic shared memory.
bool dynamic_shared_memory(const kernel_family& f) { return f.backend == backend::cuda; }

}  // namespace

loaded_variant load_variant(const device_runtime& rt, const std::string& image, const record& r, int device) {
  const kernel_family& family = find_family(r.family);
  loaded_variant v{&family, loaded_module(rt, image)};
  v.kernel = v.module.kernel(family.kernel_symbol.c_str());
  if (!family.combine_symbol.empty() && r.config.splits > 1) v.combine = v.module.kernel(family.combine_symbol.c_str());
  if (dynamic_shared_memory(family) && r.shared_memory_bytes > 48 * 1024)
    rt.set_dynamic_shared_memory(v.kernel, static_cast<int>(r.shared_memory_bytes), device);
  return v;
}

launch_plan plan_launch(const loaded_variant& v, const record& r, const device_problem& pr, const gpu_info& gpu) {
  pr.reserve_workspace(split_workspace_floats(pr.shp, r.config.splits));
  return plan_launch(v, r, pr.shp, pr.kernel_params(), gpu);
}

launch_plan plan_launch(const loaded_variant& v, const record& r, const problem& s, const attn_k::fwd_params& params,
                        const gpu_info& gpu) {
  launch_plan plan;
  plan.kernel = v.kernel;
  plan.combine = v.combine;
  plan.grid = {static_cast<unsigned>((s.q_len + r.config.block_m - 1) / r.config.block_m),
               static_cast<unsigned>(s.heads), static_cast<unsigned>(s.batch)};
  plan.block = {static_cast<unsigned>(v.family->threads(r.config))};
  plan.shared_bytes = dynamic_shared_memory(*v.family) ? static_cast<int>(r.shared_memory_bytes) : 0;
  if (v.family->plan_launch) v.family->plan_launch(plan, r.config, s, params, gpu);
  else plan.set_argument(params);
  plan.combine_dependent = plan.combine != nullptr && v.family->backend == backend::cuda && gpu.desc.cc_major >= 9;
  return plan;
}

void launch(const device_runtime& rt, const launch_plan& plan, stream_t stream) {
  // Every family's kernel takes one parameter: the struct itself is copied at launch.
  void* args[] = {const_cast<void*>(plan.argument.get())};
  rt.launch(plan.kernel, plan.grid, plan.block, plan.shared_bytes, stream, args);
  // The combine step may start as the split kernel ends (it waits for the partials itself).
  if (plan.combine && plan.combine_dependent)
    rt.launch_dependent(plan.combine, plan.combine_grid, plan.combine_block, 0, stream, args);
  else if (plan.combine)
    rt.launch(plan.combine, plan.combine_grid, plan.combine_block, 0, stream, args);
}

}  // namespace attn
