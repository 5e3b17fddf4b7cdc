#pragma once
// What a libattn_tune context is: one device, a compile cache, a tuned table (and a bundle's
// cubins), the kernels loaded so far and the launch plans made so far. forward() may be called
// from several threads at once; it never synchronizes. After the first call of a plan (a
// problem, its tensors, its stream) a call allocates nothing, frees nothing and reads nothing
// from the device: it looks the plan up and launches, so it may be captured in a CUDA graph.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend/resources.hpp"
#include "backend/runtime.hpp"
#include "codegen/backward.hpp"
#include "codegen/cache.hpp"
#include "library/bundle.hpp"
#include "library/tuned_table.hpp"
#include "run/launch.hpp"

namespace attn {

struct engine_options {
  int device = 0;
  std::string cache_dir;  ///< empty: no disk cache
  std::string table;      ///< empty: none; a bundle's path is taken as `bundle`
  std::string bundle;     ///< empty: none
  warning_sink warn = [](const std::string&) {};  ///< what the table and the cache warn of
};

struct forward_choice {
  tuned_choice choice;
  bool from_bundle = false;
};

class engine {
 public:
  /// Throws device_error (no device), table_error, bundle_error.
  explicit engine(const engine_options& options);
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// The config for s (pure: no compile). Throws unsupported_problem.
  tuned_choice choose(const problem& s) const;
  /// Compiles or loads the kernel once, makes the plan once per (shape, params, stream, whether
  /// `stream` is capturing: plan_key.hpp), and launches it on `stream`. Throws invalid_input,
  /// unsupported_problem, compile_failure, device_error.
  forward_choice forward(const problem& s, const attn_k::fwd_params& params, stream_t stream);
  /// The backward of s (pass bwd or not): the table's variant for it or the fallback
  /// (choose_config), compiled or loaded once per instantiation (dtype, head dim, causal), its
  /// kernels enqueued on `stream` with s's grids. The choice and grids are made once per problem;
  /// a later call of it looks them up and enqueues. Throws invalid_input, unsupported_problem,
  /// compile_failure, device_error.
  tuned_choice backward(const problem& s, const attn_k::bwd_params& params, stream_t stream);
  void synchronize(stream_t stream) const;
  const gpu_info& gpu() const { return m_gpu; }

 private:
  struct kernel_slot {
    std::mutex mutex;
    std::optional<loaded_variant> variant;
    record rec;
    bool from_bundle = false;
  };
  struct cached_plan {
    launch_plan plan;
    forward_choice choice;
    /// Split-KV's partial outputs: the stream's (eager) or the plan's own (captured).
    std::shared_ptr<device_buffer> workspace;
  };
  kernel_slot& kernel_for(const tuned_choice& c, const kernel_family& f, const problem& s);
  struct backward_slot {
    std::mutex mutex;
    std::optional<loaded_backward> kernels;
  };
  /// A problem's backward: its choice, its loaded kernels (a slot of m_backward) and its grids.
  struct backward_plan {
    tuned_choice choice;
    backward_slot* slot = nullptr;
    std::vector<backward_launch> launches;
  };
  backward_plan make_backward_plan(const problem& s, stream_t stream);
  cached_plan make_plan(const problem& s, const attn_k::fwd_params& params, stream_t stream, bool capturing);
  /// What a stream workspace holds: split-KV's counters and partial outputs (its counters must stay
  /// zero between calls), or the atomic-dQ backward's fp32 sum (left as the last call summed it).
  enum class workspace_use { split_kv, dq_sum };
  /// The workspace of eager calls on `stream` of `floats` floats for one use: calls on one stream
  /// run one after another, so they share it, whatever their tensors.
  std::shared_ptr<device_buffer> stream_workspace(stream_t stream, int64_t floats, workspace_use use);

  const device_runtime& m_rt;
  gpu_info m_gpu;
  compile_cache m_cache;
  std::unique_ptr<tuned_source> m_table;
  std::optional<attn::bundle> m_bundle;
  std::mutex m_mutex;  ///< guards the maps below (a slot's own mutex guards its loading)
  std::map<std::string, std::unique_ptr<kernel_slot>> m_kernels;
  std::map<std::string, std::unique_ptr<backward_slot>> m_backward;  ///< by instantiation
  /// By problem_bytes(): dropped all at once when full (the slots they point to stay).
  std::map<std::string, std::shared_ptr<const backward_plan>> m_backward_plans;
  std::map<std::string, cached_plan> m_plans;  ///< eager calls' plans: dropped all at once when full
  /// Plans made during a capture: a graph launches them for as long as it lives, so they and
  /// their workspaces are kept for the context's life (nothing is freed while a graph may use it).
  std::map<std::string, cached_plan> m_captured_plans;
  /// stream_workspace's, kept for the context's life (freeing one would synchronize).
  std::map<std::tuple<stream_t, int64_t, workspace_use>, std::shared_ptr<device_buffer>> m_workspaces;
  /// The atomic-dQ workspaces of backward calls made during a capture (kept as m_captured_plans).
  std::vector<std::shared_ptr<device_buffer>> m_captured_workspaces;
};

/// RAII: makes `device` current for the calling thread and restores the previous one.
class device_guard {
 public:
  explicit device_guard(int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int m_previous = -1, m_device;
};

}  // namespace attn
