// The default command: tune one shape (or --compile-only).
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "codegen/nvrtc.hpp"
#include "codegen/hiprtc.hpp"
#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "codegen/compile_pool.hpp"
#include "report/csv.hpp"
#include "run/copy_bandwidth.hpp"
#include "run/phases.hpp"
#include "run/nvml.hpp"
#include "report/table.hpp"
#include "verify/gpu_gradients.hpp"  // backward_absolute_tolerance
#include "verify/tolerance.hpp"

namespace attn {

namespace {

// Without --out: the default path, or the next free one beside it when an earlier run wrote it,
// claimed (created empty) so that a run started at the same time takes another.
std::string free_default_out(const std::string& device_name, const problem& s, claimed_file& claim) {
  const std::string path = default_out_path(device_name, s);
  claim = claimed_file(path);
  if (claim.path() != path)
    fmt::print(stderr, "note: {} exists (an earlier run); writing {} (--out names the file)\n", path, claim.path());
  return claim.path();
}

// The run's --out (or the default, claimed), checked: not over an existing file without --force,
// writable, and not the --json file.
std::string results_path(const options& opt, const std::string& device_name, claimed_file& claim) {
  if (!opt.out.empty()) refuse_overwrite(opt.out, opt.force, "--force overwrites it");
  const std::string out = opt.out.empty() ? free_default_out(device_name, opt.problem, claim) : opt.out;
  check_writable(out);
  check_json_apart(opt, out);
  return out;
}

}  // namespace

namespace {

// The passes a run tunes, one after the other: its own, or fwd then bwd for fwdbwd.
std::vector<problem> passes_of(const problem& s) {
  if (s.pass != attention_pass::fwdbwd) return {s};
  problem fwd = s, bwd = s;
  fwd.pass = attention_pass::fwd;
  bwd.pass = attention_pass::bwd;
  return {fwd, bwd};
}

// The backward's tolerance, as its records' messages state it per gradient.
std::string describe_backward_bound(const tune_result& r) {
  return fmt::format("dQ, dK, dV each within 2x the input type's own error + {:.0e} (FlashAttention's rule; the "
                     "largest input-type error {:.2e}, allowed {:.2e})",
                     backward_absolute_tolerance, r.lowp_error, r.allowed_error);
}

// "best: fa2 m128_n64_w4_s2  0.1234 ms ..." and the memory it saves.
void print_best(const options& opt, const tune_options& t, const record& b, const problem& s) {
  if (t.objective == objective::energy && !(b.joules_per_call > 0))
    fmt::print(stderr, "note: no variant's energy was measured (NVML's counter did not step twice 0.5 s apart within 3 s of "
                       "running it): the best is the fastest, by time\n");
  fmt::print("{} {} {}  {:.4f} ms (+-{:.1f}%, IQR {:.4f}, {} reps)  {:.1f} TFLOPS  max error {:.2e}{}\n",
             styled(colour_for(stdout), fmt::emphasis::bold | fg(fmt::terminal_color::green),
                    s.pass == attention_pass::bwd ? "best (bwd):" : "best:"),
             b.family, config_name(b), b.median_ms, 100 * b.noise, b.iqr_ms, b.reps, b.tflops, b.max_error,
             b.tied ? "  (tied: within the noise of a faster one, and simpler)" : "");
  if (opt.verbosity == verbosity::quiet) return;
  if (s.pass == attention_pass::bwd)
    fmt::print("memory: a materializing backward needs {} extra (fp32 P and dS); the fused kernels need {} (delta, "
               "the row sums of dO.O): {:.0f}x less\n",
               human_bytes(double(b.materialized_bytes)), human_bytes(double(b.fused_extra_bytes)), b.memory_saving_ratio);
  else
    fmt::print("memory: a materializing attention needs {} extra (fp32 scores + {} probabilities); "
               "the fused kernel needs {} (its LSE, measured): {:.0f}x less\n",
               human_bytes(double(b.materialized_bytes)), to_string(s.dtype), human_bytes(double(b.fused_extra_bytes)),
               b.memory_saving_ratio);
}

// fwdbwd's sum: a training step's attention, the forward's and the backward's best one after the other.
std::string fwdbwd_line(const record& fwd, const record& bwd) {
  problem both = fwd.shape;
  both.pass = attention_pass::fwdbwd;
  const double ms = fwd.median_ms + bwd.median_ms;
  return fmt::format("fwd + bwd: {:.4f} + {:.4f} = {:.4f} ms  {:.1f} TFLOPS (3.5x the forward's FLOPs)  [{} {} + {} {}]",
                     fwd.median_ms, bwd.median_ms, ms, tflops(both, ms), fwd.family, config_name(fwd), bwd.family,
                     config_name(bwd));
}

void print_summary(const options& opt, const tune_result& r, const std::string& out_path) {
  if (opt.verbosity == verbosity::quiet) return;
  // (-v printed every variant's compile log and measurements as they happened: stderr.)
  fmt::print("{}\n\n{}\n", r.pruning, format_table(r.records, static_cast<size_t>(opt.top)));
  fmt::print("{}\n", phase_summary(r));
  if (!out_path.empty()) fmt::print("wrote {}\n", out_path);
}

}  // namespace

int run_tune(const options& opt) {
  if (opt.out == "-") reserve_stdout_for_data();
  prepare_json(opt);
  const compile_cache cache = make_cache(opt);
  progress_line progress(opt.verbosity);
  tune_options t = make_tune_options(opt, progress);

  const bool hip = opt.backend == "hip";
  if (opt.compile_only) {
    if (hip) {
      if (!hip_available())
        throw invalid_input("this attn-tune was built without HIP: install libamdhip64-dev and libhiprtc-builtins5, "
                            "then rebuild (scripts/setup.sh does)");
      const auto archs = hip_supported_archs();
      if (std::find(archs.begin(), archs.end(), opt.arch) == archs.end())
        throw invalid_input(fmt::format("hiprtc {} cannot compile the mfma family for --arch {} (it can for: {})",
                                        hiprtc_version(), opt.arch, fmt::join(archs, ", ")));
    } else if (!nvrtc_supports(opt.arch)) {
      throw invalid_input(fmt::format("NVRTC {} cannot compile for --arch {}", nvrtc_version(), opt.arch));
    }
    claimed_file claim;
    const std::string out = results_path(opt, "compile-only-" + opt.arch, claim);
    const resource_limits arch = limits_for_arch(opt.arch);
    if (opt.verbosity != verbosity::quiet)
      fmt::print("attn-tune {} --compile-only: {} for {} ({} {}); timing needs a GPU\n",
                 searched_families(family_run_of(opt), arch.cc_major, arch.cc_minor, opt.problem),
                 describe(opt.problem), opt.arch, hip ? "hiprtc" : "NVRTC", hip ? hiprtc_version() : nvrtc_version());
    const run_metadata meta = metadata_of(opt, nullptr);
    if (opt.verbosity != verbosity::quiet) fmt::print("{}\n", describe(meta.copy));
    std::fflush(stdout);  // before the progress and -v lines on stderr, also when stdout is a pipe
    std::vector<record> all;
    for (const problem& s : passes_of(opt.problem)) {
      const tune_result r = compile_families(family_run_of(opt), opt.arch, s, cache, t);
      progress.done();
      all.insert(all.end(), r.records.begin(), r.records.end());
      print_summary(opt, r, "");
    }
    write_csv(out, all);
    write_json(opt, results_json(meta, all));
    if (opt.verbosity != verbosity::quiet) fmt::print("wrote {}\n", out);
    const auto failed = std::count_if(all.begin(), all.end(),
                                      [](const record& x) { return x.status == status::compile_error; });
    if (failed > 0) {
      fmt::print(stderr, "error: {} variant(s) failed to compile (see the message column of {})\n", failed, out);
      return 1;
    }
    return 0;
  }

  if (!have_device(opt)) return 4;
  const gpu_info gpu = open_device(opt, opt.device);
  claimed_file claim;
  const std::string out = results_path(opt, gpu.desc.name, claim);
  if (opt.verbosity == verbosity::quiet) {
  } else if (gpu.backend == backend::cuda)
    fmt::print("attn-tune {}: {} on {} ({}, {} SMs, CUDA {}, NVRTC {}), seed {}\n",
               searched_families(family_run_of(opt), gpu.desc.cc_major, gpu.desc.cc_minor, opt.problem),
               describe(opt.problem), gpu.desc.name, gpu.desc.arch, gpu.desc.sm_count,
               gpu.desc.cuda_version, gpu.desc.nvrtc_version, opt.seed);
  else
    fmt::print("attn-tune {}: {} on {} ({}, {} CUs, {}, hiprtc {}), seed {}\n", opt.family, describe(opt.problem),
               gpu.desc.name, gpu.desc.arch, gpu.desc.sm_count, gpu.desc.cuda_version, gpu.desc.nvrtc_version,
               opt.seed);
  std::fflush(stdout);
  std::optional<tuned_db> db = open_run_db(opt);
  const nvml_monitor nvml = nvml_monitor::open(gpu.pci_bus_id, gpu.ordinal);
  const bool quiet = opt.verbosity == verbosity::quiet;
  // Measured once, before the first pass the database does not answer.
  std::optional<copy_bandwidth> copy;
  std::string energy_note;
  auto prepare_timing = [&] {
    if (copy) return;
    energy_note = energy_note_of(gpu, nvml);
    require_energy(opt, energy_note);
    if (gpu.backend == backend::cuda) {  // NVML knows NVIDIA GPUs only
      if (!nvml.available()) fmt::print(stderr, "{}\n", nvml.note());
      else if (!nvml.energy_note().empty()) fmt::print(stderr, "{}\n", nvml.energy_note());
      t.clocks = &nvml;
    }
    copy = measure_copy_bandwidth(runtime_of(gpu));
    t.copy_gbps = copy->gbps;
    if (!quiet) fmt::print("{}\n", describe(*copy));
    std::fflush(stdout);
  };
  std::vector<record> all;  // every pass's records, in the order the passes ran
  std::vector<size_t> best_at;  // each pass's best, an index into all
  auto write_results = [&] {  // the CSV and --json, of every pass so far
    write_csv(out, all);
    run_metadata meta = metadata_of(opt, &gpu);
    if (copy) meta.copy = *copy;
    meta.energy_note = energy_run_note(opt, energy_note);
    write_json(opt, results_json(meta, all));
  };
  bool context_dead = false;
  int status = 0;
  for (const problem& s : passes_of(opt.problem)) {
    const tuning_key key = make_tuning_key(with_driver(gpu.desc, nvml), s, searched_space_of(opt), cache.kernels());
    if (db && !opt.retune)
      if (const auto hit = db->find(key)) {
        fmt::print("{}\n\n{}", from_db_note(*hit), format_table(hit->records, static_cast<size_t>(opt.top)));
        fmt::print("best: {} {}  {:.4f} ms (+-{:.1f}%)  {:.1f} TFLOPS  max error {:.2e}\n", hit->best_family,
                   hit->best_config, hit->median_ms, 100 * hit->noise, hit->tflops, hit->max_error);
        const size_t first = all.size();
        all.insert(all.end(), hit->records.begin(), hit->records.end());
        if (const auto best = choose_best(hit->records, t.objective)) best_at.push_back(first + *best);
        continue;
      }
    prepare_timing();
    const tune_result r = tune_families(family_run_of(opt), s, gpu, cache, t, context_dead);
    progress.done();
    if (const std::string w = throttle_warning(r.records); !w.empty()) fmt::print(stderr, "{}\n", w);
    // A complete tuning is remembered (a hung one is not: its space was not all measured).
    if (db && r.best && !r.hung) remember(*db, key, r.records);
    const size_t first = all.size();
    all.insert(all.end(), r.records.begin(), r.records.end());
    print_summary(opt, r, "");
    if (!quiet)
      fmt::print("reference ({} inputs): {}; {}\n", to_string(opt.inputs),
                 s.pass == attention_pass::bwd ? describe_backward_bound(r)
                                               : describe(acceptance_for(r.lowp_error, r.rounding_error)),
                 timing_summary(t.timing, t.search));
    if (r.best) {
      best_at.push_back(first + *r.best);
      print_best(opt, t, r.records[*r.best], s);
    }
    if (r.hung) {
      write_results();
      fmt::print(stderr, "{}\n", hang_report(r.records[*r.hung], "what it measured is in " + out));
      return exit_hung;
    }
    if (!r.best) {
      fmt::print(stderr, "error: no {} variant passed the correctness check\n", to_string(s.pass));
      status = 1;
      break;
    }
    if (!opt.dump_dir.empty() && s.pass == attention_pass::fwd) {
      dump_best(s, gpu, cache, r, opt.seed + 1000, opt.inputs, t.timing.kernel_timeout_s, opt.dump_dir);
      fmt::print("dumped q, k, v, o, lse (.npy) to {}\n", opt.dump_dir);
    }
  }
  write_results();
  if (opt.problem.pass == attention_pass::fwdbwd && status == 0 && best_at.size() == 2)
    fmt::print("{}\n", fwdbwd_line(all[best_at[0]], all[best_at[1]]));
  if (!quiet) fmt::print("wrote {}\n", out);
  return status;
}



}  // namespace attn
