#include "library/engine.hpp"

#include "codegen/kernel_args.hpp"

#include <cstring>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "library/errors.hpp"
#include "library/graph_capture.hpp"
#include "library/plan_key.hpp"
#include "codegen/open_gpu.hpp"

namespace attn {

namespace {

constexpr size_t max_cached_plans = 4096;  // a plan holds pointers: a new buffer is a new plan

}  // namespace

device_guard::device_guard(int device) : m_device(device) {
  if (cudaGetDevice(&m_previous) != cudaSuccess) m_previous = -1;
  if (m_previous != m_device) {
    const cudaError_t e = cudaSetDevice(m_device);
    if (e != cudaSuccess)
      throw device_error(e, fmt::format("cudaSetDevice({}): {}", m_device, cudaGetErrorString(e)));
  }
}

device_guard::~device_guard() {
  if (m_previous >= 0 && m_previous != m_device) cudaSetDevice(m_previous);
}

engine::engine(const engine_options& options)
    : m_rt(cuda_runtime()), m_cache(options.cache_dir, kernel_sources::embedded(), options.warn) {
  std::string why;
  const int count = m_rt.device_count(&why);
  if (count == 0) throw device_error(0, fmt::format("no CUDA device available: {}", why));
  if (options.device < 0 || options.device >= count)
    throw device_error(0, fmt::format("device {} does not exist: this machine has {} CUDA device(s)", options.device,
                                      count));
  {
    device_guard guard(options.device);
    m_gpu = open_gpu(m_rt, options.device);
  }
  std::string table = options.table, bundle_path = options.bundle;
  if (!table.empty() && bundle_path.empty() && looks_like_bundle(read_file_text(table).substr(0, 8)))
    std::swap(table, bundle_path);
  if (!bundle_path.empty()) {
    m_bundle = parse_bundle(read_file_text(bundle_path), bundle_path);
    check_bundle_target(*m_bundle, m_gpu.desc.arch, m_cache.kernels(), bundle_path);
  }
  if (!table.empty()) m_table = open_tuned_source(table, m_cache.kernels());
  else if (m_bundle) m_table = std::make_unique<tuned_table>(tuned_table::parse(m_bundle->table, bundle_path));
  else m_table = std::make_unique<tuned_table>();
  for (const std::string& w : m_table->warnings()) options.warn(w);
  m_table->check_device(m_gpu.desc);
}

tuned_choice engine::choose(const problem& s) const {
  return choose_config(*m_table, m_gpu.desc, m_gpu.limits, s);
}

engine::kernel_slot& engine::kernel_for(const tuned_choice& c, const kernel_family& f, const problem& s) {
  const std::string key = instantiation_key(f, c.config, s);
  kernel_slot* slot = nullptr;
  {
    std::lock_guard lock(m_mutex);
    auto& entry = m_kernels[f.name + " " + key];
    if (!entry) entry = std::make_unique<kernel_slot>();
    slot = entry.get();
  }
  std::lock_guard lock(slot->mutex);  // one thread loads; the others wait for it
  if (slot->variant) return *slot;
  record& r = slot->rec;
  r.device = m_gpu.desc;
  r.shape = s;
  r.family = f.name;
  r.config = c.config;
  r.shared_memory_bytes = f.shared_memory_bytes(c.config, s);
  std::string cubin;
  if (const bundle_kernel* k = m_bundle ? m_bundle->find(f.name, key) : nullptr) {
    cubin = k->cubin;
    slot->from_bundle = true;
  } else {
    const auto compiled = compile_with_cache(m_cache, f.instantiation(c.config, s), m_gpu.desc.arch,
                                             f.compile_options, f.backend);
    if (!compiled.result.ok)
      throw compile_failure(fmt::format("{} {} for {} does not compile: {}", f.name, name(c.config), describe(s),
                                        compiled.result.log));
    cubin = compiled.result.cubin;
  }
  slot->variant.emplace(load_variant(m_rt, cubin, r, m_gpu.ordinal));
  return *slot;
}

engine::cached_plan engine::make_plan(const problem& s, const attn_k::fwd_params& params, stream_t stream,
                                      bool capturing) {
  const tuned_choice c = choose(s);
  const kernel_family& f = find_family(c.family);
  kernel_slot& slot = kernel_for(c, f, s);
  attn_k::fwd_params with_workspace = params;
  std::shared_ptr<device_buffer> workspace;
  if (const int64_t floats = split_workspace_floats(s, c.config.splits); floats > 0) {
    // During a capture its own (forward() zeroes its counters in every graph that captures it).
    workspace = capturing ? std::make_shared<device_buffer>(m_rt, floats * 4) : stream_workspace(stream, floats, workspace_use::split_kv);
    with_workspace.o_partial = workspace->as<float>();
    with_workspace.workspace_floats = floats;
  }
  return {plan_launch(*slot.variant, slot.rec, s, with_workspace, m_gpu), {c, slot.from_bundle}, workspace};
}

std::shared_ptr<device_buffer> engine::stream_workspace(stream_t stream, int64_t floats, workspace_use use) {
  std::lock_guard lock(m_mutex);
  auto& w = m_workspaces[{stream, floats, use}];
  if (!w) {
    w = std::make_shared<device_buffer>(m_rt, floats * 4);
    // split-KV's counters start at 0 (the kernels leave them 0), ordered before its first use
    if (use == workspace_use::split_kv) m_rt.memset_async(w->get(), 0, split_counter_bytes(), stream);
  }
  return w;
}

forward_choice engine::forward(const problem& s, const attn_k::fwd_params& params, stream_t stream) {
  device_guard guard(m_gpu.ordinal);
  const bool capturing = stream_capturing(stream);
  const std::string key = plan_key(s, params, stream, capturing);
  cached_plan cached;
  bool found = false;
  {
    std::lock_guard lock(m_mutex);
    const auto& plans = capturing ? m_captured_plans : m_plans;
    if (auto it = plans.find(key); it != plans.end()) cached = it->second, found = true;
  }
  if (!found) {  // the first call of this plan: choose, compile or load, plan
    std::optional<relaxed_capture_mode> relaxed;  // a cudaMalloc or module load is no capture's
    if (capturing) relaxed.emplace();
    cached = make_plan(s, params, stream, capturing);
    std::lock_guard lock(m_mutex);
    auto& plans = capturing ? m_captured_plans : m_plans;
    if (!capturing && plans.size() >= max_cached_plans) plans.clear();  // frees no workspace: m_workspaces has them
    plans.emplace(key, cached);
  }
  // A captured plan's split-KV counters are zeroed by a node of each graph that captures it, before
  // its kernel: a graph made from a plan another capture made (and maybe never replayed) would
  // otherwise find them as cudaMalloc left them.
  if (capturing && cached.workspace) m_rt.memset_async(cached.workspace->get(), 0, split_counter_bytes(), stream);
  launch(m_rt, cached.plan, stream);
  return cached.choice;
}

engine::backward_plan engine::make_backward_plan(const problem& s, stream_t stream) {
  const tuned_choice c = choose_config(*m_table, m_gpu.desc, m_gpu.limits, s);
  const std::string source = backward_instantiation(c.backward, s);
  backward_slot* slot = nullptr;
  {
    std::lock_guard lock(m_mutex);
    auto& entry = m_backward[source];
    if (!entry) entry = std::make_unique<backward_slot>();
    slot = entry.get();
  }
  std::lock_guard lock(slot->mutex);  // one thread compiles and loads; the others wait for it
  if (!slot->kernels) {
    std::optional<relaxed_capture_mode> relaxed;  // a module load is no capture's
    if (stream_capturing(stream)) relaxed.emplace();
    const auto compiled = compile_with_cache(m_cache, source, m_gpu.desc.arch, backward_compile_options(), backend::cuda);
    if (!compiled.result.ok)
      throw compile_failure(fmt::format("the backward {} for {} does not compile: {}", name(c.backward), describe(s),
                                        compiled.result.log));
    slot->kernels.emplace(load_backward(m_rt, compiled.result.cubin, c.backward, s, m_gpu.ordinal));
  }
  // The grids are this problem's (the instantiation fixes the kernels, not the lengths or the batch).
  return {c, slot, backward_launches(c.backward, s)};
}

tuned_choice engine::backward(const problem& shape, const attn_k::bwd_params& params, stream_t stream) {
  device_guard guard(m_gpu.ordinal);
  problem s = shape;
  s.pass = attention_pass::bwd;
  // The choice, the kernels and the grids depend on the problem alone (the tensors are params):
  // after a problem's first call, a call looks them up and enqueues.
  const std::string key = problem_bytes(s);
  std::shared_ptr<const backward_plan> plan;
  {
    std::lock_guard lock(m_mutex);
    if (auto it = m_backward_plans.find(key); it != m_backward_plans.end()) plan = it->second;
  }
  if (!plan) {
    plan = std::make_shared<const backward_plan>(make_backward_plan(s, stream));
    std::lock_guard lock(m_mutex);
    if (m_backward_plans.size() >= max_cached_plans) m_backward_plans.clear();  // the slots stay in m_backward
    m_backward_plans.emplace(key, plan);
  }
  if (!plan->choice.backward.atomic_dq) {
    run_backward(m_rt, *plan->slot->kernels, plan->launches, params, stream);
    return plan->choice;
  }
  // Atomic dQ's fp32 sum (the variant zeroes it itself): eager calls use the stream's workspace
  // (calls on one stream run one after another); a captured call gets its own, kept for the
  // context's life, as a graph may replay it on any stream.
  std::shared_ptr<device_buffer> workspace;
  if (stream_capturing(stream)) {
    relaxed_capture_mode relaxed;  // a cudaMalloc is no capture's
    workspace = std::make_shared<device_buffer>(m_rt, dq_accum_bytes(s));
    std::lock_guard lock(m_mutex);
    m_captured_workspaces.push_back(workspace);
  } else {
    workspace = stream_workspace(stream, dq_accum_bytes(s) / 4, workspace_use::dq_sum);
  }
  attn_k::bwd_params with_workspace = params;
  with_workspace.dq_accum = workspace->as<float>();
  run_backward(m_rt, *plan->slot->kernels, plan->launches, with_workspace, stream);
  return plan->choice;
}

void engine::synchronize(stream_t stream) const {
  device_guard guard(m_gpu.ordinal);
  m_rt.synchronize(stream);
}

}  // namespace attn
