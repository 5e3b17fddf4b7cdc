#include "run/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "core/numeric.hpp"
#include "core/rates.hpp"
#include "report/npy.hpp"
#include "codegen/backward.hpp"
#include "verify/gpu_gradients.hpp"
#include "verify/gpu_reference.hpp"
#include "verify/row_sample.hpp"
#include "verify/tolerance.hpp"
#include "run/launch.hpp"
#include "run/nvml.hpp"
#include "run/sustain.hpp"

namespace attn {

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Verifies one compiled variant; timing comes later (run_search), for those that pass.
void verify_variant(variant& v, const device_problem& pr, const reference_outputs& ref,
                    const std::vector<cpu_sample>& samples, const support_kernels& support,
                    const gpu_info& gpu, const timing_options& timing, const acceptance& bound, stream_t stream) {
  record& r = v.rec;
  const device_runtime& rt = support.rt;
  const loaded_variant kernel = load_variant(rt, v.cubin, r, gpu.ordinal);
  const launch_plan plan = plan_launch(kernel, r, pr, gpu);
  poison_outputs(support, pr, stream);
  launch(rt, plan, stream);
  rt.wait_for_kernels(stream, timing.kernel_timeout_s);

  const error_stats o_err = element_error(support, pr.o.get(), ref.o_full.as<float>(), pr.o_elements());
  const error_stats lse_err = float_error(support, pr.lse.as<float>(), ref.lse_full.as<float>(),
                                          lse_bytes(pr.shp) / 4);
  const double cpu_err = cpu_sample_error(rt, pr, samples);
  r.max_error = std::max(o_err.max_error, std::isnan(cpu_err) ? 0.0 : cpu_err);
  const double allowed = bound.allowed;
  r.allowed_error = allowed;
  r.bound = to_string(bound.decided_by);
  if (o_err.bad > 0 || lse_err.bad > 0) {
    r.status = status::wrong;
    r.max_error = NAN;
    r.message = fmt::format("{} output and {} LSE elements NaN/inf or never written", o_err.bad, lse_err.bad);
  } else if (!within_tolerance(o_err.max_error, allowed)) {
    r.status = status::wrong;
    r.message = fmt::format("max error {:.3e} > allowed {:.3e} ({})", o_err.max_error, allowed, describe(bound));
  } else if (!(lse_err.max_error <= lse_tolerance)) {
    r.status = status::wrong;
    r.message = fmt::format("LSE error {:.3e} > {:.0e}", lse_err.max_error, lse_tolerance);
  } else if (!within_tolerance(cpu_err, allowed)) {
    r.status = status::wrong;
    r.message = fmt::format("float64 CPU check of {} sampled rows failed (error {:.3e}, allowed {:.3e}: {})",
                            samples.size(), cpu_err, allowed, describe(bound));
  }
}

// Times one verified variant, run by run_kernel on a stream, with these options; the record keeps
// the last measurement. s: the problem it runs (its pass counts the FLOPs and bytes).
void measure(record& r, const std::function<void(stream_t)>& run_kernel, const problem& s, const device_runtime& rt,
             l2_flusher& flusher, const timing_options& timing, const nvml_monitor* clocks, double copy_gbps,
             stream_t stream) {
  r.regime = timing.regime;
  r.settle_ms = 0;
  if (timing.regime == timing_regime::sustained) {
    std::function<std::optional<int>()> sm_clock;
    if (clocks && clocks->available())
      sm_clock = [clocks]() -> std::optional<int> {
        const auto state = clocks->read();
        return state ? std::optional<int>(state->sm_clock_mhz) : std::nullopt;
      };
    const sustain_result warm = run_until_settled(rt, run_kernel, stream, sm_clock, {}, timing.kernel_timeout_s);
    r.settle_ms = warm.waited_ms;
    if (!warm.settled && sm_clock)
      r.message = fmt::format("sustained: the SM clock had not settled after {:.0f} ms ({} to {} MHz)", warm.waited_ms,
                              warm.readings.empty() ? 0 : warm.readings.front(),
                              warm.readings.empty() ? 0 : warm.readings.back());
  }
  const std::optional<gpu_state> before = clocks ? clocks->read() : std::nullopt;
  const summary t = time_kernel(rt, run_kernel, flusher, timing, stream);
  const std::optional<gpu_state> after = clocks ? clocks->read() : std::nullopt;
  // --objective energy: the power running it back to back, between two steps of the counter.
  power_reading power;
  if (timing.energy_window_ms > 0 && clocks && clocks->has_energy()) {
    power_options o;
    o.window_ms = timing.energy_window_ms;
    power = measure_power(rt, run_kernel, stream, [clocks] { return clocks->energy_mj(); }, o,
                          timing.kernel_timeout_s);
  }
  if (before && after) r.clocks = clocks_of(*before, *after);
  r.status = status::ok;
  r.reps = t.count;
  r.median_ms = t.median;
  r.iqr_ms = t.iqr;
  r.noise = t.noise;
  r.tflops = tflops(s, t.median);
  r.gbps = gbps(moved_bytes(s), t.median);
  r.copy_gbps = copy_gbps;
  r.copy_fraction = copy_fraction(r.gbps, copy_gbps);
  r.joules_per_call = joules_per_call(power.watts, t.median);
  r.tflops_per_watt = tflops_per_watt(s, r.joules_per_call);
}

// What tune() does on the device that differs by pass: the inputs and the reference (made again
// after a device reset), how a compiled variant is verified (its status left compiled when it
// passes, else wrong with why) and how a verified one is timed; and the reference's numbers.
// The base holds what both passes have: the support module, the problem's inputs (fresh random, of
// the kind asked for), the L2 flush and the stream.
class pass_checks {
 public:
  pass_checks(const problem& s, const gpu_info& gpu, const compile_cache& cache, const tune_options& options)
      : m_gpu(gpu), m_options(options), rt(runtime_of(gpu)), support(load_support(rt, cache, s.dtype, gpu.desc.arch)),
        pr(std::make_unique<device_problem>(s, *support, options.seed, options.inputs)),
        flusher(std::make_unique<l2_flusher>(rt, gpu.l2_bytes)), stream(std::make_unique<device_stream>(rt)) {}
  virtual ~pass_checks() = default;
  virtual void verify(variant& v) = 0;
  virtual void time(variant& v, const timing_options& timing) = 0;
  double lowp_error = 0, rounding_error = 0, allowed_error = 0;
  std::string bound;
  int64_t fused_extra_bytes = 0;  ///< the fused kernel's own extra memory, measured where it can be

 protected:
  // --deterministic: the outputs as the check's run left them, then those of `rerun` (which poisons
  // and runs the variant again on the same inputs); any bit that differs makes r wrong, naming the
  // output and how many of its 32-bit words differ.
  void rerun_check(record& r, const std::vector<std::pair<const char*, const device_buffer*>>& outputs,
                   const std::function<void()>& rerun) {
    std::vector<std::vector<uint32_t>> first;
    for (const auto& [what, b] : outputs) first.push_back(to_host<uint32_t>(rt, *b));
    rerun();
    rt.wait_for_kernels(stream->get(), m_options.timing.kernel_timeout_s);
    std::string why;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::vector<uint32_t> again = to_host<uint32_t>(rt, *outputs[i].second);
      size_t differ = 0;
      for (size_t w = 0; w < again.size(); ++w) differ += again[w] != first[i][w];
      if (differ > 0) why += fmt::format("{}{}: {} of {} words", why.empty() ? "" : ", ", outputs[i].first, differ, again.size());
    }
    if (why.empty()) return;
    r.status = status::wrong;
    r.message = "--deterministic: a rerun on the same inputs differs (" + why + ")";
  }
  // Times v.rec's variant, run by run_kernel, with these options.
  void measure_with(record& r, const std::function<void(stream_t)>& run_kernel, const timing_options& timing) {
    measure(r, run_kernel, pr->shp, rt, *flusher, timing, m_options.clocks, m_options.copy_gbps, stream->get());
  }
  const gpu_info& m_gpu;
  const tune_options& m_options;
  const device_runtime& rt;
  std::unique_ptr<support_kernels> support;
  std::unique_ptr<device_problem> pr;
  std::unique_ptr<l2_flusher> flusher;
  std::unique_ptr<device_stream> stream;
};

// Everything a forward variant's checks need on the device (verify_variant, the CPU-checked rows).
class forward_checks final : public pass_checks {
 public:
  forward_checks(const problem& s, const gpu_info& gpu, const compile_cache& cache, const tune_options& options)
      : pass_checks(s, gpu, cache, options) {
    ref = compute_reference(*support, *pr, options.reference_chunk_bytes);
    samples = cpu_samples(rt, *pr, options.cpu_check_rows, options.seed);
    m_bound = acceptance_for(ref.lowp_error, ref.rounding_error);
    lowp_error = ref.lowp_error;
    rounding_error = ref.rounding_error;
    allowed_error = m_bound.allowed;
    bound = to_string(m_bound.decided_by);
    fused_extra_bytes = pr->lse_measured_bytes > 0 ? pr->lse_measured_bytes : lse_bytes(s);
  }
  void verify(variant& v) override {
    verify_variant(v, *pr, ref, samples, *support, m_gpu, m_options.timing, m_bound, stream->get());
    if (!m_options.deterministic || v.rec.status != status::compiled) return;
    const loaded_variant kernel = load_variant(rt, v.cubin, v.rec, m_gpu.ordinal);
    const launch_plan plan = plan_launch(kernel, v.rec, *pr, m_gpu);
    rerun_check(v.rec, {{"O", &pr->o}, {"LSE", &pr->lse}}, [&] {
      poison_outputs(*support, *pr, stream->get());
      launch(rt, plan, stream->get());
    });
  }
  void time(variant& v, const timing_options& timing) override {
    const loaded_variant kernel = load_variant(rt, v.cubin, v.rec, m_gpu.ordinal);
    const launch_plan plan = plan_launch(kernel, v.rec, *pr, m_gpu);
    measure_with(v.rec, [&](stream_t st) { launch(rt, plan, st); }, timing);
  }

 private:
  acceptance m_bound;
  reference_outputs ref;
  std::vector<cpu_sample> samples;
};

// The backward's: the forward's problem with the reference forward's O and LSE as inputs, dO, and
// the reference gradients (verify/gpu_gradients.hpp); a variant passes when dQ, dK and dV each
// are within FlashAttention's rule of them and nothing was left unwritten.
class backward_checks final : public pass_checks {
 public:
  backward_checks(const problem& s, const gpu_info& gpu, const compile_cache& cache, const tune_options& options)
      : pass_checks(s, gpu, cache, options) {
    {
      const reference_outputs forward = compute_reference(*support, *pr, options.reference_chunk_bytes);
      ref = compute_backward_reference(*support, *pr, forward, options.seed, options.reference_chunk_bytes);
    }
    params = make_bwd_params(s, backward_tensors_of(*pr, ref));
    lowp_error = std::max({ref.lowp_dq, ref.lowp_dk, ref.lowp_dv});
    allowed_error = backward_allowed(lowp_error);
    bound = "naive";
    fused_extra_bytes = lse_bytes(s);  // delta, the backward's own scratch
  }
  void verify(variant& v) override {
    record& r = v.rec;
    const loaded_backward kernels = load_backward(rt, v.cubin, r.backward, pr->shp, m_gpu.ordinal);
    poison_gradients(*support, ref, stream->get());
    run_backward(rt, kernels, params, stream->get());
    rt.wait_for_kernels(stream->get(), m_options.timing.kernel_timeout_s);
    const gradient_errors e = gradient_error(*support, *pr, ref);
    const std::tuple<const char*, const error_stats*, double> grads[] = {
        {"dQ", &e.dq, ref.lowp_dq}, {"dK", &e.dk, ref.lowp_dk}, {"dV", &e.dv, ref.lowp_dv}};
    // The record's error and allowance are the binding gradient's: the largest error over its own allowance.
    double ratio = -1;
    for (const auto& [what, err, lowp] : grads)
      if (err->max_error / backward_allowed(lowp) > ratio) {
        ratio = err->max_error / backward_allowed(lowp);
        r.max_error = err->max_error;
        r.allowed_error = backward_allowed(lowp);
      }
    r.bound = bound;
    std::string why;
    for (const auto& [what, err, lowp] : grads) {
      if (err->bad > 0) why += fmt::format("{}{}: {} elements NaN/inf or never written", why.empty() ? "" : "; ", what, err->bad);
      else if (!within_tolerance(err->max_error, backward_allowed(lowp)))
        why += fmt::format("{}{}: max error {:.3e} > allowed {:.3e} (2x the input type's {:.3e} + {:.0e})",
                           why.empty() ? "" : "; ", what, err->max_error, backward_allowed(lowp), lowp,
                           backward_absolute_tolerance);
    }
    if (!why.empty()) {
      r.status = status::wrong;
      r.message = why;
      if (e.dq.bad + e.dk.bad + e.dv.bad > 0) r.max_error = NAN;
      return;
    }
    if (m_options.deterministic)
      rerun_check(r, {{"dQ", &ref.dq}, {"dK", &ref.dk}, {"dV", &ref.dv}}, [&] {
        poison_gradients(*support, ref, stream->get());
        run_backward(rt, kernels, params, stream->get());
      });
  }
  void time(variant& v, const timing_options& timing) override {
    const loaded_backward kernels = load_backward(rt, v.cubin, v.rec.backward, pr->shp, m_gpu.ordinal);
    measure_with(v.rec, [&](stream_t st) { run_backward(rt, kernels, params, st); }, timing);
  }

 private:
  backward_reference ref;
  attn_k::bwd_params params{};
};

// options.on_variant for each variant the compile pool finishes, or nothing.
compiled_variant compiled_news(const tune_options& options) {
  if (!options.on_variant) return {};
  return [&options](const record& r, const std::string& log) {
    options.on_variant(variant_event::compiled, r, log);
  };
}

// tune() and compile_only() take one pass: fwdbwd is two runs (the command line's), each recorded
// as its own pass. The backward's families are those with backward kernels.
void check_pass(const problem& s, const std::string& family) {
  if (s.pass == attention_pass::fwdbwd)
    throw invalid_input("pass fwdbwd is tuned as two runs, pass fwd and then pass bwd; tune() takes one of them");
  if (s.pass == attention_pass::bwd && !has_backward_kernels(family))
    throw invalid_input(fmt::format("family {} has no backward kernels: the backward runs on fa2 (mma.sync, sm_80+) "
                                    "and wgmma (sm_90a)", family));
}

// A variant's records as the pool built them: the forward's of the family, or the backward's.
std::vector<variant> build_pass(const problem& s, const tune_options& options, int sm_count, const device_desc& device,
                                const resource_limits& limits, const compile_cache& cache,
                                const compile_progress& progress) {
  if (s.pass == attention_pass::bwd) {
    const std::vector<backward_config> configs = backward_configs_of(options, s);
    if (configs.empty())  // --configs of another family's kernels (wg_: wgmma's)
      throw invalid_input(fmt::format("--configs names no backward variant of family {} (wg_ names wgmma's)",
                                      options.family));
    return build_backward_variants(s, configs, device, limits, cache, options.jobs, progress, compiled_news(options));
  }
  return build_variants(find_family(options.family), s, configs_of(options, s, sm_count), device, limits, cache,
                        options.jobs, progress, compiled_news(options));
}

void check_grid_limits(const problem& s) {
  if (s.batch > 65535) throw invalid_input(fmt::format("batch {} exceeds the grid limit 65535", s.batch));
  if (s.heads > 65535) throw invalid_input(fmt::format("heads {} exceed the grid limit 65535", s.heads));
  if (s.q_len > INT32_MAX / 2 || s.kv_len > INT32_MAX / 2)
    throw invalid_input(fmt::format("sequence lengths {} / {} exceed 2^30", s.q_len, s.kv_len));
}

}  // namespace

std::vector<tile_config> configs_of(const tune_options& options, const problem& s, int sm_count) {
  if (!options.configs.empty()) return options.configs;
  const auto all = for_problem(options.space, s, sm_count).enumerate();
  return options.search == search_kind::random ? sample_configs(all, options.samples, options.seed) : all;
}

std::vector<backward_config> backward_configs_of(const tune_options& options, const problem& s) {
  std::vector<backward_config> out;
  for (const backward_config& c : options.backward_configs.empty() ? backward_default_configs(s) : options.backward_configs) {
    if (backward_family(c) != options.family) continue;
    if (options.deterministic && !deterministic(c)) {  // its dQ's rounding depends on the atomics' order
      if (!options.backward_configs.empty())
        throw invalid_input(fmt::format("--configs {} with --deterministic: its dQ is summed by fp32 atomics, in no "
                                        "fixed order, so reruns are not bit-identical",
                                        name(c)));
      continue;
    }
    out.push_back(c);
  }
  return out;
}

namespace {

// An ok record that can win: when any ok record was measured to full precision, only those (a
// screened-only median is too coarse to beat one); else every ok record.
std::vector<bool> contenders(const std::vector<record>& rows) {
  const bool any_full = std::any_of(rows.begin(), rows.end(), [](const record& r) {
    return r.status == status::ok && r.measured == measurement::full;
  });
  std::vector<bool> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    out[i] = rows[i].status == status::ok && (!any_full || rows[i].measured != measurement::screened);
  return out;
}

// The order by energy: records with it measured first, by joules per call; the others by median.
bool less_energy(const record& a, const record& b) {
  const bool ha = a.joules_per_call > 0, hb = b.joules_per_call > 0;
  if (ha != hb) return ha;
  if (!ha) return a.median_ms < b.median_ms;
  return a.joules_per_call < b.joules_per_call;
}

}  // namespace

bool within_noise_of(const record& r, const record& fastest) {
  const double low = r.median_ms * (1 - r.noise);
  const double high = fastest.median_ms * (1 + fastest.noise);
  return low <= high && r.median_ms <= fastest.median_ms * (1 + max_tie_gap);
}

std::optional<size_t> choose_best(const std::vector<record>& rows, objective goal) {
  const std::vector<bool> can_win = contenders(rows);
  if (goal == objective::energy) {
    std::optional<size_t> least;
    for (size_t i = 0; i < rows.size(); ++i)
      if (can_win[i] && rows[i].joules_per_call > 0 && (!least || less_energy(rows[i], rows[*least]))) least = i;
    if (least) return least;
  }
  std::optional<size_t> fastest;
  for (size_t i = 0; i < rows.size(); ++i)
    if (can_win[i] && (!fastest || rows[i].median_ms < rows[*fastest].median_ms))
      fastest = i;
  if (!fastest) return std::nullopt;
  size_t best = *fastest;
  for (size_t i = 0; i < rows.size(); ++i)
    if (can_win[i] && within_noise_of(rows[i], rows[*fastest]) && simpler_than(rows[i].config, rows[best].config))
      best = i;
  return best;
}

void assign_ranks(std::vector<record>& rows, std::optional<size_t> best, objective goal) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].rank = 0;
    rows[i].tied = false;
    if (rows[i].status == status::ok && (!best || i != *best)) ok.push_back(i);
  }
  // Fully measured variants before screened-only ones (contenders()), each by median.
  const std::vector<bool> can_win = contenders(rows);
  std::stable_sort(ok.begin(), ok.end(), [&](size_t a, size_t b) {
    if (can_win[a] != can_win[b]) return bool(can_win[a]);
    if (goal == objective::energy) return less_energy(rows[a], rows[b]);
    return rows[a].median_ms < rows[b].median_ms;
  });
  int next = 1;
  if (best) {
    rows[*best].rank = next++;
    rows[*best].tied = goal == objective::time && std::any_of(ok.begin(), ok.end(), [&](size_t i) {
      return can_win[i] && rows[i].median_ms < rows[*best].median_ms;
    });
  }
  for (size_t i : ok) rows[i].rank = next++;
}

int64_t tuning_memory_bytes(const problem& s, int64_t l2_bytes, int64_t reference_chunk_bytes) {
  return q_bytes(s) + o_bytes(s) + kv_bytes(s) + v_bytes(s) + lse_bytes(s) + decode_inputs_bytes(s) +
         reference_memory_bytes(s, reference_chunk_bytes) + 2 * l2_bytes + (64 << 20);
}

tune_result tune(const problem& s, const gpu_info& gpu, const compile_cache& cache,
                 const tune_options& options) {
  const auto start = clock_type::now();
  validate(s);
  check_pass(s, options.family);
  check_grid_limits(s);
  const bool backward = s.pass == attention_pass::bwd;
  const device_runtime& rt = runtime_of(gpu);
  const kernel_family& family = find_family(options.family);
  if (family.backend != gpu.backend)
    throw invalid_input(fmt::format("family {} runs on the {} backend, but {} is a {} device", family.name,
                                    to_string(family.backend), gpu.desc.name, to_string(gpu.backend)));
  // After a hang in an earlier run of this process (another family's, say) the hung kernels keep
  // the device busy until the process exits: the variants are still built, so that their records
  // say what pruning and the compiler made of them, but nothing touches the device.
  const bool busy = rt.hung();
  if (!busy) {
    const int64_t needed = tuning_memory_bytes(s, gpu.l2_bytes, options.reference_chunk_bytes) +
                           (backward ? backward_reference_memory_bytes(s, options.reference_chunk_bytes) : 0);
    const int64_t free_bytes = rt.free_memory();
    if (needed > free_bytes)
      throw invalid_input(fmt::format(
          "shape {} needs {:.2f} GiB of device memory to tune (inputs, outputs, reference), but only "
          "{:.2f} GiB of {} are free",
          describe(s), needed / 1073741824.0, free_bytes / 1073741824.0, gpu.desc.name));
  }
  std::mutex say_mutex;  // the compile pool's threads and this one report progress
  auto say = [&](const std::string& line) {
    std::lock_guard lock(say_mutex);
    if (options.progress) options.progress(line);
  };

  tune_result result;
  // The variants compile on the pool while this thread makes the inputs and the reference on the
  // device (a cold tune's compile is most of its time; the reference no longer waits for it).
  const auto compile_start = clock_type::now();
  std::future<std::vector<variant>> compiling = std::async(std::launch::async, [&] {
    auto built = build_pass(s, options, gpu.desc.sm_count, gpu.desc, gpu.limits, cache, [&](int done, int total, int cached) {
      say(fmt::format("compiling {}/{} ({} from cache)", done, total, cached));
    });
    result.compile_seconds = seconds_since(compile_start);
    return built;
  });

  // Everything the checks need on the device. Rebuilt after a variant kills the context (an
  // illegal address is sticky): a device reset, then the same seed gives the same inputs.
  auto make_state = [&]() -> std::unique_ptr<pass_checks> {
    if (backward) return std::make_unique<backward_checks>(s, gpu, cache, options);
    return std::make_unique<forward_checks>(s, gpu, cache, options);
  };
  std::unique_ptr<pass_checks> state;
  int64_t fused_extra = lse_bytes(s);
  if (!busy) {
    say(fmt::format("reference: fresh random inputs ({}), fp32, naive low-precision and rounded-output {} on the GPU",
                    to_string(options.inputs), backward ? "attention and its gradients" : "attention"));
    const auto reference_start = clock_type::now();
    state = make_state();
    result.reference_seconds = seconds_since(reference_start);
    result.lowp_error = state->lowp_error;
    result.rounding_error = state->rounding_error;
    result.allowed_error = state->allowed_error;
    result.bound = state->bound;
    fused_extra = state->fused_extra_bytes;
  }
  auto variants = compiling.get();
  result.pruning = pruning_summary(variants);

  const int to_run = static_cast<int>(std::count_if(
      variants.begin(), variants.end(), [](const variant& v) { return v.rec.status == status::compiled; }));
  int ran = 0;
  bool lost = false;
  const char* vendor = gpu.backend == backend::cuda ? "CUDA" : "HIP";
  auto budget_spent = [&] { return options.deadline && clock_type::now() >= *options.deadline; };
  const std::string budget_note = "not timed: the --budget-s budget was spent first";
  // A variant that failed on the device: its record says why; a lost context is reset (the
  // checking state rebuilt) or, when it cannot be, the run's remaining variants are not run here.
  auto fail = [&](variant& v, const std::exception& e) {
    record& r = v.rec;
    r.status = status::launch_error;
    r.message = e.what();
    if (dynamic_cast<const kernel_hung*>(&e)) {
      result.hung = static_cast<size_t>(&v - variants.data());
      return;
    }
    if (!rt.context_lost()) return;
    state.reset();
    if (rt.reset_device(gpu.ordinal)) {
      r.message += fmt::format(" (the {} context was lost; the device was reset and the run goes on)", vendor);
      state = make_state();
    } else {
      r.message += fmt::format(" (the {} context was lost and the device could not be reset)", vendor);
      lost = true;
    }
  };
  auto not_run_here = [&](variant& v) {
    v.rec.status = status::launch_error;
    v.rec.message = fmt::format(
        "not run: an earlier variant lost the {} context and the device could not be reset", vendor);
    result.not_run.push_back(static_cast<size_t>(&v - variants.data()));
  };

  // Phase 1: every variant that compiled is verified; nothing is timed before it passes.
  const auto verify_start = clock_type::now();
  std::vector<size_t> passed;  // indices into variants
  for (auto& v : variants) {
    record& r = v.rec;
    r.inputs = options.inputs;
    r.fused_extra_bytes = fused_extra;
    r.memory_saving_ratio = double(r.materialized_bytes) / double(r.fused_extra_bytes);
    if (r.status != status::compiled) continue;
    ++result.compiled;
    result.cached += r.cached ? 1 : 0;
    if (busy || result.hung) {
      r.status = status::launch_error;
      r.message = "not run: an earlier variant hung";
      continue;
    }
    if (lost) {
      not_run_here(v);
      continue;
    }
    if (budget_spent()) {
      result.budget_spent = true;
      r.message = "not verified: the --budget-s budget was spent first";
      continue;
    }
    say(fmt::format("verifying {}/{}: {}", ++ran, to_run, config_name(r)));
    try {
      state->verify(v);
      if (r.status == status::compiled) passed.push_back(static_cast<size_t>(&v - variants.data()));
    } catch (const std::exception& e) {
      fail(v, e);
    }
    if (options.on_variant) options.on_variant(variant_event::verified, r, "");
  }
  result.verify_seconds = seconds_since(verify_start);
  result.verified = static_cast<int>(passed.size());

  // Phase 2: timing, as the search decides (screening, then full precision for the contenders).
  search_settings settings;
  settings.kind = options.search;
  settings.full = options.timing;
  settings.keep_top = options.keep_top;
  int timed = 0;
  auto measure = [&](size_t k, const timing_options& timing) -> std::optional<summary> {
    variant& v = variants[passed[k]];
    if (lost) {
      not_run_here(v);
      return std::nullopt;
    }
    const bool full = &timing == &settings.full;
    say(fmt::format("timing {} ({}): {}", ++timed, full ? "full" : "screen", config_name(v.rec)));
    const variant_event event = full ? variant_event::measured : variant_event::screened;
    try {
      state->time(v, timing);
    } catch (const std::exception& e) {
      fail(v, e);
      if (options.on_variant) options.on_variant(event, v.rec, "");
      return std::nullopt;
    }
    if (options.on_variant) options.on_variant(event, v.rec, "");
    summary t;
    t.count = v.rec.reps;
    t.median = v.rec.median_ms;
    t.iqr = v.rec.iqr_ms;
    t.noise = v.rec.noise;
    return t;
  };
  const search_outcome searched = run_search(
      passed.size(), settings, measure, budget_spent, [&] { return result.hung.has_value(); },
      [&] { return seconds_since(start); });
  for (size_t k = 0; k < passed.size(); ++k) {
    record& r = variants[passed[k]].rec;
    if (searched.failed[k]) continue;
    r.measured = searched.measured[k];
    if (r.measured == measurement::none && r.status == status::compiled) {
      r.message = result.hung ? "not timed: an earlier variant hung" : budget_note;
      if (result.hung) r.status = status::launch_error;
    }
  }
  result.screened = searched.screened;
  result.refined = searched.refined;
  result.screen_seconds = searched.screen_seconds;
  result.refine_seconds = searched.refine_seconds;
  result.budget_spent = result.budget_spent || searched.budget_spent;
  state.reset();
  for (auto& v : variants) result.records.push_back(v.rec);
  result.best = choose_best(result.records, options.objective);
  assign_ranks(result.records, result.best, options.objective);
  if (result.best) result.best_cubin = variants[*result.best].cubin;
  result.total_seconds = seconds_since(start);
  return result;
}

tune_result compile_only(const problem& s, const std::string& arch, const compile_cache& cache,
                         const tune_options& options) {
  const auto start = clock_type::now();
  validate(s);
  check_pass(s, options.family);
  device_desc device;
  device.name = "(compile-only)";
  device.arch = arch;
  const resource_limits limits = limits_for_arch(arch);
  device.cc_major = limits.cc_major;
  device.cc_minor = limits.cc_minor;
  device.nvrtc_version = nvrtc_version();
  auto variants = build_pass(s, options, 0, device, limits, cache, [&](int done, int total, int cached) {
    if (options.progress) options.progress(fmt::format("compiling {}/{} ({} from cache)", done, total, cached));
  });
  tune_result result;
  result.pruning = pruning_summary(variants);
  for (auto& v : variants) {
    result.compiled += v.rec.status == status::compiled ? 1 : 0;
    result.cached += v.rec.cached ? 1 : 0;
    v.rec.inputs = options.inputs;
    result.records.push_back(v.rec);
  }
  result.compile_seconds = result.total_seconds = seconds_since(start);
  return result;
}

void dump_best(const problem& s, const gpu_info& gpu, const compile_cache& cache, const tune_result& result,
               uint64_t seed, input_kind inputs, double kernel_timeout_s, const std::string& dir) {
  if (!result.best) throw std::runtime_error("--dump: no variant passed, nothing to dump");
  const record& r = result.records[*result.best];
  const device_runtime& rt = runtime_of(gpu);
  const auto support = load_support(rt, cache, s.dtype, gpu.desc.arch);
  const device_problem pr(s, *support, seed, inputs);
  // The winner may have been compiled in another process (isolated re-runs): the cache has it.
  const kernel_family& family = find_family(r.family);
  const std::string cubin = !result.best_cubin.empty()
                                ? result.best_cubin
                                : compile_with_cache(cache, family.instantiation(r.config, s), gpu.desc.arch,
                                                     family.compile_options, family.backend)
                                      .result.cubin;
  const loaded_variant kernel = load_variant(rt, cubin, r, gpu.ordinal);
  const launch_plan plan = plan_launch(kernel, r, pr, gpu);
  poison_outputs(*support, pr, nullptr);
  launch(rt, plan, nullptr);
  rt.wait_for_kernels(nullptr, kernel_timeout_s);

  const bool q_major = s.layout == layout::bhsd;
  // [B, heads, N, dim] or [B, N, heads, dim]; V and O have the value dim (dv).
  auto dims = [&](int64_t heads, int64_t n, int64_t d) {
    return q_major ? std::vector<int64_t>{s.batch, heads, n, d} : std::vector<int64_t>{s.batch, n, heads, d};
  };
  const std::vector<int64_t> q_dims = dims(s.heads, s.q_len, s.head_dim), o_dims = dims(s.heads, s.q_len, value_dim(s));
  const std::vector<int64_t> kv_dims = dims(s.kv_heads, s.kv_len, s.head_dim),
                             v_dims = dims(s.kv_heads, s.kv_len, value_dim(s));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& file, const device_buffer& b, const std::vector<int64_t>& dims) {
    const auto bits = to_host<uint16_t>(rt, b);
    const std::string path = dir + "/" + file;
    if (s.dtype == dtype::fp16) {
      write_npy_f16(path, bits.data(), dims);
    } else {
      std::vector<float> wide(bits.size());
      for (size_t i = 0; i < bits.size(); ++i) wide[i] = bf16_to_float(bits[i]);
      write_npy_f32(path, wide.data(), dims);
    }
  };
  write("q.npy", pr.q, q_dims);
  write("k.npy", pr.k, kv_dims);
  write("v.npy", pr.v, v_dims);
  write("o.npy", pr.o, o_dims);
  const auto lse = to_host<float>(rt, pr.lse);
  write_npy_f32(dir + "/lse.npy", lse.data(), {s.batch, s.heads, s.q_len});
}

}  // namespace attn
