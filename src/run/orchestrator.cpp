#include "run/orchestrator.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "codegen/backward.hpp"  // has_backward_kernels
#include "codegen/compile_pool.hpp"
#include "report/csv.hpp"

extern char** environ;

namespace attn {

namespace {

// Runs `configs` of shape s in a fresh attn-tune process (same seed, so the same inputs and
// tolerance) and returns its records; empty when the child produced no CSV.
std::vector<record> run_configs_in_child(const family_run& opt, const tune_options& t, const std::string& family,
                                         const problem& s, const std::vector<std::string>& configs, uint64_t seed,
                                         int device) {
  const std::string csv = fmt::format("{}/attn-tune-isolated-{}-{}.csv",
                                      std::filesystem::temp_directory_path().string(), getpid(), seed);
  std::vector<std::string> args = child_arguments(opt, t, family, s, configs, seed, device, csv);
  args.insert(args.begin(), "/proc/self/exe");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return {};
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<record> out;
  try {
    if (std::filesystem::exists(csv)) out = read_csv(csv);
  } catch (const std::exception&) {
    out.clear();
  }
  std::filesystem::remove(csv);
  return out;
}

bool not_run_message(const record& r) { return r.message.rfind("not run:", 0) == 0; }

// Whether the families' results hold variants that ran or compiled and none that passed: every
// one wrong, or failing to compile or launch (none cut short by a budget or a hung kernel).
bool none_passed(const std::vector<tune_result>& parts) {
  bool failed = false;
  for (const tune_result& r : parts) {
    if (r.best || r.budget_spent || r.hung || !r.not_run.empty()) return false;
    for (const record& x : r.records) {
      if (x.status == status::ok || x.status == status::compiled) return false;
      failed |= x.status == status::wrong || x.status == status::compile_error || x.status == status::launch_error;
    }
  }
  return failed;
}

// The run's families that can run on a device of this capability; when none can, all of them
// (their pruning then says why). With the default families and `superseding`, only those of them
// that supersede the others on this device, when there are any; for a decode-sized problem
// (`decode`), those with the decode axes instead (split-KV and packed GQA are where decode is won).
// For the backward (`backward`), those with backward kernels (fa2, wgmma).
std::vector<size_t> runnable(const family_run& opt, int cc_major, int cc_minor, bool superseding, bool decode,
                             bool backward) {
  std::vector<size_t> out;
  for (size_t i = 0; i < opt.families.size(); ++i)
    if (runs_on(find_family(opt.families[i]), cc_major, cc_minor) &&
        (!backward || has_backward_kernels(opt.families[i])))
      out.push_back(i);
  if (out.empty())
    for (size_t i = 0; i < opt.families.size(); ++i) out.push_back(i);
  if (backward) return out;  // the backward's families (no forward family supersedes them)
  if (superseding && opt.families_defaulted) {
    std::vector<size_t> best;
    for (size_t i : out) {
      const kernel_family& f = find_family(opt.families[i]);
      if (decode ? f.default_space.decode_axes : f.supersedes_others) best.push_back(i);
    }
    if (!best.empty()) return best;
  }
  return out;
}

tune_result merge_families(std::vector<tune_result> parts, objective goal);

// Decode-sized, or reading a KV cache (paged, per-sequence lengths): the default families are then
// those with the decode axes (only they read a cache).
bool decode_like(const problem& s) { return decode_sized(s) || s.page_size > 0 || has_kv_lens(s); }

// `run` once per family of the run that a device of this capability runs (t with that family and
// its space), merged into one result. A family that refuses the shape (invalid_input: e.g. none
// of its configs fits) is left out; only when every family refuses is the run refused, saying
// why for each.
// With the default families on a device where one supersedes the others, only that one is run;
// the others only when it refuses the shape, or when none of its variants passed (every one was
// wrong or failed to compile or launch: a defect of that family on this problem; not a hung
// kernel, after which the device is lost to this process), so a problem the others take is not
// left without a correct kernel.
template <class Run>
tune_result over_families(const family_run& opt, int cc_major, int cc_minor, tune_options t, Run run, bool decode,
                          bool backward, bool superseding = true) {
  std::vector<tune_result> parts;
  std::vector<std::string> refusals;  // each family's reason
  std::string named;                  // the same, each after its family's name
  auto run_family = [&](size_t i) {  // a refusal is kept for the message when no family runs
    t.family = opt.families[i];
    t.space = opt.spaces[i];
    try {
      parts.push_back(run(t));
    } catch (const invalid_input& e) {
      refusals.push_back(e.what());
      named += fmt::format("{}{}: {}", named.empty() ? "" : "\n", t.family, e.what());
    }
  };
  const std::vector<size_t> families = runnable(opt, cc_major, cc_minor, superseding, decode, backward);
  for (size_t i : families) run_family(i);
  const std::vector<size_t> all = runnable(opt, cc_major, cc_minor, false, false, backward);
  if (parts.empty() && families != all) return over_families(opt, cc_major, cc_minor, t, run, decode, backward, false);
  // (Not with --configs: those name the superseding family's configs.)
  if (families != all && t.configs.empty() && t.backward_configs.empty() && none_passed(parts)) {
    std::vector<std::string> ran, rest;
    std::vector<size_t> others;
    for (size_t i : families) ran.push_back(opt.families[i]);
    for (size_t i : all)
      if (std::find(families.begin(), families.end(), i) == families.end()) {
        others.push_back(i);
        rest.push_back(opt.families[i]);
      }
    if (t.progress)
      t.progress(fmt::format("no variant of {} passed on {}: searching {} too", fmt::join(ran, ","),
                             parts.front().records.empty() ? std::string("this problem")
                                                           : describe(parts.front().records.front().shape),
                             fmt::join(rest, ",")));
    for (size_t i : others) run_family(i);  // one that refuses leaves the superseding family's result
  }
  if (parts.empty()) {  // a reason that is not the family's (the shape, the device) is said once
    const bool same = std::all_of(refusals.begin(), refusals.end(), [&](const auto& r) { return r == refusals[0]; });
    throw invalid_input(same ? refusals.front() : named);
  }
  return merge_families(std::move(parts), t.objective);
}

// One result from the per-family results of a shape: all records, one best over all of them.
tune_result merge_families(std::vector<tune_result> parts, objective goal) {
  if (parts.size() == 1) return std::move(parts.front());
  tune_result all;
  for (auto& p : parts) {
    const std::string& family = p.records.empty() ? std::string("?") : p.records.front().family;
    all.pruning += fmt::format("{}{}: {}", all.pruning.empty() ? "" : "\n", family, p.pruning);
    for (size_t i : p.not_run) all.not_run.push_back(all.records.size() + i);
    if (p.hung) all.hung = all.records.size() + *p.hung;
    all.records.insert(all.records.end(), p.records.begin(), p.records.end());
    all.lowp_error = std::max(all.lowp_error, p.lowp_error);
    all.rounding_error = std::max(all.rounding_error, p.rounding_error);
    if (all.bound.empty() || p.allowed_error > all.allowed_error) all.bound = p.bound;
    all.allowed_error = std::max(all.allowed_error, p.allowed_error);
    all.compile_seconds += p.compile_seconds;
    all.total_seconds += p.total_seconds;
    all.compiled += p.compiled;
    all.cached += p.cached;
    all.verified += p.verified;
    all.screened += p.screened;
    all.refined += p.refined;
    all.verify_seconds += p.verify_seconds;
    all.screen_seconds += p.screen_seconds;
    all.refine_seconds += p.refine_seconds;
    all.reference_seconds += p.reference_seconds;
    all.rerun += p.rerun;
    all.rerun_seconds += p.rerun_seconds;
    all.budget_spent = all.budget_spent || p.budget_spent;
  }
  all.best = choose_best(all.records, goal);
  assign_ranks(all.records, all.best, goal);
  size_t offset = 0;
  for (auto& p : parts) {  // the winner's binary, when its family's run kept it
    if (all.best && *all.best >= offset && *all.best < offset + p.records.size() && p.best &&
        *p.best == *all.best - offset)
      all.best_cubin = std::move(p.best_cubin);
    offset += p.records.size();
  }
  return all;
}


}  // namespace

std::vector<std::string> child_arguments(const family_run& opt, const tune_options& t, const std::string& family,
                                         const problem& s,
                                         const std::vector<std::string>& configs, uint64_t seed, int device,
                                         const std::string& csv) {
  std::vector<std::string> args = {"--problem", problem_key(s),
                                   "--family", family, "--seed", std::to_string(seed),
                                   "--inputs", to_string(t.inputs),
                                   "--min-reps", std::to_string(t.timing.min_reps),
                                   "--max-reps", std::to_string(t.timing.max_reps),
                                   "--min-time-ms", fmt::format("{}", t.timing.min_total_ms),
                                   "--max-time-ms", fmt::format("{}", t.timing.max_total_ms),
                                   "--max-noise", fmt::format("{}", t.timing.max_noise),
                                   "--search", to_string(t.search),
                                   "--objective", to_string(t.objective),
                                   "--regime", to_string(t.timing.regime),
                                   "--kernel-timeout-s", fmt::format("{}", t.timing.kernel_timeout_s),
                                   "--device", std::to_string(device),
                                   "--jobs", std::to_string(t.jobs), "--top", "0", "--out", csv, "--no-db"};
  if (t.deterministic) args.push_back("--deterministic");
  if (opt.cache_dir.empty()) args.push_back("--no-cache");
  else args.insert(args.end(), {"--cache-dir", opt.cache_dir});
  if (!opt.kernels_dir.empty()) args.insert(args.end(), {"--kernels-dir", opt.kernels_dir});
  args.insert(args.end(), {"--configs", fmt::format("{}", fmt::join(configs, ","))});
  return args;
}

tune_result tune_recovering(const family_run& opt, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                            const tune_options& t, bool& context_dead) {
  tune_result r;
  std::vector<std::string> pending;  // config names (config_name: a backward's variant for pass bwd)
  if (!context_dead) {
    r = tune(s, gpu, cache, t);
    for (size_t i : r.not_run) pending.push_back(config_name(r.records[i]));
    if (pending.empty()) return r;
    context_dead = true;
  } else if (s.pass == attention_pass::bwd) {
    for (const auto& c : backward_configs_of(t, s)) pending.push_back(name(c));
  } else {
    for (const auto& c : configs_of(t, s, gpu.desc.sm_count)) pending.push_back(name(c));
  }
  const auto rerun_start = std::chrono::steady_clock::now();
  r.rerun = static_cast<int>(pending.size());
  for (int round = 0; round < 32 && !pending.empty(); ++round) {
    if (t.progress) t.progress(fmt::format("re-running {} variant(s) in a fresh process", pending.size()));
    const auto child = run_configs_in_child(opt, t, t.family, s, pending, t.seed, gpu.ordinal);
    if (child.empty()) {
      for (auto& rec : r.records)
        if (not_run_message(rec)) rec.message = "not run: the isolated re-run in a fresh process failed";
      break;
    }
    pending.clear();
    for (const auto& c : child) {
      auto it = std::find_if(r.records.begin(), r.records.end(),
                             [&](const record& x) { return config_name(x) == config_name(c); });
      if (it == r.records.end()) r.records.push_back(c);
      else *it = c;
      if (not_run_message(c)) pending.push_back(config_name(c));
    }
  }
  r.rerun_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - rerun_start).count();
  r.not_run.clear();
  r.best = choose_best(r.records, t.objective);
  assign_ranks(r.records, r.best, t.objective);
  r.best_cubin.clear();  // the winner may have been compiled in a child: see best_cubin_of()
  return r;
}

tune_result tune_families(const family_run& opt, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                          tune_options t, bool& context_dead) {
  return over_families(
      opt, gpu.desc.cc_major, gpu.desc.cc_minor, t,
      [&](const tune_options& f) { return tune_recovering(opt, s, gpu, cache, f, context_dead); }, decode_like(s),
      s.pass == attention_pass::bwd);
}

tune_result compile_families(const family_run& opt, const std::string& arch, const problem& s,
                             const compile_cache& cache, tune_options t) {
  const resource_limits limits = limits_for_arch(arch);
  return over_families(
      opt, limits.cc_major, limits.cc_minor, t, [&](const tune_options& f) { return compile_only(s, arch, cache, f); },
      decode_like(s), s.pass == attention_pass::bwd);
}

std::string searched_families(const family_run& opt, int cc_major, int cc_minor, const problem& s) {
  // As over_families runs them: the superseding family, or when it refuses the problem (a head dim,
  // a window it lacks) the others that take it; the refusals are said after the names.
  std::vector<std::string> names, refused;
  const bool backward = s.pass == attention_pass::bwd;
  for (size_t i : runnable(opt, cc_major, cc_minor, true, decode_like(s), backward)) {
    const auto why = backward ? backward_refusal(s) : problem_refusal(find_family(opt.families[i]), s);
    if (!why) names.push_back(opt.families[i]);
    else if (std::find(refused.begin(), refused.end(), *why) == refused.end()) refused.push_back(*why);
  }
  if (names.empty())
    for (size_t i : runnable(opt, cc_major, cc_minor, false, false, backward))
      if (!problem_refusal(find_family(opt.families[i]), s)) names.push_back(opt.families[i]);
  std::string text = fmt::format("{}", fmt::join(names, ","));
  if (!refused.empty()) text += fmt::format(" ({})", fmt::join(refused, "; "));
  return text;
}

}  // namespace attn
