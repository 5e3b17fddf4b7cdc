#include "cli/command_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "cli/option_checks.hpp"
#include "codegen/compile_pool.hpp"
#include "report/csv.hpp"

extern char** environ;

namespace attn {

namespace {

// Runs `configs` of shape s in a fresh attn-tune process (same seed, so the same inputs and
// tolerance) and returns its records; empty when the child produced no CSV.
std::vector<record> run_configs_in_child(const options& opt, const std::string& family, const problem& s,
                                         const std::vector<tile_config>& configs, uint64_t seed, int device) {
  const std::string csv = fmt::format("{}/attn-tune-isolated-{}-{}.csv",
                                      std::filesystem::temp_directory_path().string(), getpid(), seed);
  std::vector<std::string> args = child_arguments(opt, family, s, configs, seed, device, csv);
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

// The run's families that can run on a device of this capability; when none can, all of them
// (their pruning then says why). With the default families and `superseding`, only those of them
// that supersede the others on this device, when there are any.
std::vector<size_t> runnable(const options& opt, int cc_major, int cc_minor, bool superseding) {
  std::vector<size_t> out;
  for (size_t i = 0; i < opt.families.size(); ++i)
    if (runs_on(find_family(opt.families[i]), cc_major, cc_minor)) out.push_back(i);
  if (out.empty())
    for (size_t i = 0; i < opt.families.size(); ++i) out.push_back(i);
  if (superseding && opt.families_defaulted) {
    std::vector<size_t> best;
    for (size_t i : out)
      if (find_family(opt.families[i]).supersedes_others) best.push_back(i);
    if (!best.empty()) return best;
  }
  return out;
}

tune_result merge_families(std::vector<tune_result> parts);

// `run` once per family of the run that a device of this capability runs (t with that family and
// its space), merged into one result. A family that refuses the shape (invalid_input: e.g. none
// of its configs fits) is left out; only when every family refuses is the run refused, saying
// why for each.
// With the default families on a device where one supersedes the others, only that one is run;
// the others only when it refuses the shape.
template <class Run>
tune_result over_families(const options& opt, int cc_major, int cc_minor, tune_options t, Run run,
                          bool superseding = true) {
  std::vector<tune_result> parts;
  std::vector<std::string> refusals;  // each family's reason
  std::string named;                  // the same, each after its family's name
  const std::vector<size_t> families = runnable(opt, cc_major, cc_minor, superseding);
  for (size_t i : families) {
    t.family = opt.families[i];
    t.space = opt.spaces[i];
    try {
      parts.push_back(run(t));
    } catch (const invalid_input& e) {
      refusals.push_back(e.what());
      named += fmt::format("{}{}: {}", named.empty() ? "" : "\n", t.family, e.what());
    }
  }
  if (parts.empty() && families != runnable(opt, cc_major, cc_minor, false))
    return over_families(opt, cc_major, cc_minor, t, run, false);
  if (parts.empty()) {  // a reason that is not the family's (the shape, the device) is said once
    const bool same = std::all_of(refusals.begin(), refusals.end(), [&](const auto& r) { return r == refusals[0]; });
    throw invalid_input(same ? refusals.front() : named);
  }
  return merge_families(std::move(parts));
}

// One result from the per-family results of a shape: all records, one best over all of them.
tune_result merge_families(std::vector<tune_result> parts) {
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
  all.best = choose_best(all.records);
  assign_ranks(all.records, all.best);
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

std::vector<std::string> child_arguments(const options& opt, const std::string& family, const problem& s,
                                         const std::vector<tile_config>& configs, uint64_t seed, int device,
                                         const std::string& csv) {
  std::vector<std::string> args = {"--problem", problem_key(s),
                                   "--family", family, "--seed", std::to_string(seed),
                                   "--inputs", to_string(opt.inputs),
                                   "--min-reps", std::to_string(opt.min_reps), "--max-reps", std::to_string(opt.max_reps),
                                   "--min-time-ms", fmt::format("{}", opt.min_time_ms),
                                   "--max-time-ms", fmt::format("{}", opt.max_time_ms),
                                   "--max-noise", fmt::format("{}", opt.max_noise),
                                   "--search", opt.search,
                                   "--kernel-timeout-s", fmt::format("{}", opt.kernel_timeout_s),
                                   "--device", std::to_string(device),
                                   "--jobs", std::to_string(opt.jobs), "--top", "0", "--out", csv, "--no-db"};
  if (opt.cache_dir.empty()) args.push_back("--no-cache");
  else args.insert(args.end(), {"--cache-dir", opt.cache_dir});
  if (!opt.kernels_dir.empty()) args.insert(args.end(), {"--kernels-dir", opt.kernels_dir});
  std::string list;
  for (const auto& c : configs) {
    if (!list.empty()) list += ',';
    list += name(c);
  }
  args.insert(args.end(), {"--configs", list});
  return args;
}

progress_line::progress_line(verbosity v) : m_tty(isatty(fileno(stderr)) != 0), m_verbosity(v) {}

void progress_line::operator()(const std::string& text) {
  if (m_verbosity == verbosity::quiet) return;
  if (m_tty && m_verbosity == verbosity::normal) {
    // Cut to the terminal's width: a wrapped line would not be rewritten in place.
    fmt::print(stderr, "\r\033[K{}", fit_width(text, terminal_width(stderr) - 1));
    m_open = true;
  } else {
    fmt::print(stderr, "{}\n", text);
  }
  std::fflush(stderr);
}

void progress_line::variant(variant_event event, const record& r, const std::string& log) {
  if (m_verbosity != verbosity::verbose) return;
  done();
  fmt::print(stderr, "{}\n", variant_line(event, r, log));
  std::fflush(stderr);
}

void progress_line::done() {
  if (m_open) fmt::print(stderr, "\r\033[K");
  m_open = false;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

compile_cache make_cache(const options& opt) {
  return compile_cache(opt.cache_dir, opt.kernels_dir.empty() ? kernel_sources::embedded()
                                                              : kernel_sources::from_directory(opt.kernels_dir));
}

tune_options make_tune_options(const options& opt, progress_line& progress) {
  tune_options t;
  t.family = opt.families.front();
  t.space = opt.spaces.front();
  t.jobs = opt.jobs;
  t.seed = opt.seed;
  t.inputs = opt.inputs;
  t.timing.min_reps = opt.min_reps;
  t.timing.max_reps = opt.max_reps;
  t.timing.min_total_ms = opt.min_time_ms;
  t.timing.max_total_ms = opt.max_time_ms;
  t.timing.max_noise = opt.max_noise;
  t.search = parse_search(opt.search);
  t.samples = opt.samples;
  if (opt.budget_s > 0)
    t.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(opt.budget_s));
  t.timing.kernel_timeout_s = opt.kernel_timeout_s;
  t.progress = [&progress](const std::string& line) { progress(line); };
  if (opt.verbosity == verbosity::verbose)
    t.on_variant = [&progress](variant_event event, const record& r, const std::string& log) {
      progress.variant(event, r, log);
    };
  for (const auto& c : opt.configs) t.configs.push_back(parse_config_name(c));
  return t;
}

const device_runtime* runtime_of(const options& opt) {
  return opt.backend == "hip" ? hip_runtime() : &cuda_runtime();
}

bool have_device(const options& opt) {
  const bool hip = opt.backend == "hip";
  const device_runtime* rt = runtime_of(opt);
  std::string why = "this attn-tune was built without HIP: install libamdhip64-dev and libhiprtc-builtins5, "
                    "then rebuild";
  if (rt && rt->device_count(&why) > 0) return true;
  const std::vector<std::string> target =
      hip ? std::vector<std::string>{"--backend", "hip", "--arch", "gfx90a"} : std::vector<std::string>{"--arch", "sm_90a"};
  if (opt.command == command::tune || opt.command == command::sweep) {
    // The user's own command, compiled instead of timed.
    std::vector<std::string> args{"--compile-only"};
    const bool has_arch = std::find(opt.arguments.begin(), opt.arguments.end(), "--arch") != opt.arguments.end();
    if (!has_arch) args.insert(args.end(), target.begin(), target.end());
    args.insert(args.end(), opt.arguments.begin(), opt.arguments.end());
    fmt::print(stderr,
               "error: no {} device available ({}).\nTiming needs a GPU. Without one, compile the same run and "
               "see registers/spills/shared memory with:\n  attn-tune {}\n",
               hip ? "HIP" : "CUDA", why, shell_words(args));
  } else {
    fmt::print(stderr, "error: no {} device available ({}); this command needs a GPU.\n", hip ? "HIP" : "CUDA", why);
  }
  return false;
}

gpu_info open_device(const options& opt, int ordinal) {
  return runtime_for(opt.backend == "hip" ? backend::hip : backend::cuda).open_device(ordinal);
}

std::string best_path_for(const std::string& out) {
  const auto dot = out.rfind(".csv");
  return (dot == std::string::npos ? out : out.substr(0, dot)) + ".best.csv";
}

std::string hang_report(const record& hung, const std::string& kept) {
  return fmt::format(
      "error: {} {} on {} hung ({}); the run stopped there and {}. Leave that config out (--space, or "
      "--family {} --configs with the others) and run again; if it is only slow, raise --kernel-timeout-s",
      hung.family, name(hung.config), describe(hung.shape), hung.message, kept, hung.family);
}

tune_result tune_recovering(const options& opt, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                            const tune_options& t, bool& context_dead) {
  tune_result r;
  std::vector<tile_config> pending;
  if (!context_dead) {
    r = tune(s, gpu, cache, t);
    for (size_t i : r.not_run) pending.push_back(r.records[i].config);
    if (pending.empty()) return r;
    context_dead = true;
  } else {
    pending = configs_of(t);
  }
  const auto rerun_start = std::chrono::steady_clock::now();
  r.rerun = static_cast<int>(pending.size());
  for (int round = 0; round < 32 && !pending.empty(); ++round) {
    if (t.progress) t.progress(fmt::format("re-running {} variant(s) in a fresh process", pending.size()));
    const auto child = run_configs_in_child(opt, t.family, s, pending, t.seed, gpu.ordinal);
    if (child.empty()) {
      for (auto& rec : r.records)
        if (not_run_message(rec)) rec.message = "not run: the isolated re-run in a fresh process failed";
      break;
    }
    pending.clear();
    for (const auto& c : child) {
      auto it = std::find_if(r.records.begin(), r.records.end(), [&](const record& x) { return x.config == c.config; });
      if (it == r.records.end()) r.records.push_back(c);
      else *it = c;
      if (not_run_message(c)) pending.push_back(c.config);
    }
  }
  r.rerun_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - rerun_start).count();
  r.not_run.clear();
  r.best = choose_best(r.records);
  assign_ranks(r.records, r.best);
  r.best_cubin.clear();  // the winner may have been compiled in a child: see best_cubin_of()
  return r;
}

tune_result tune_families(const options& opt, const problem& s, const gpu_info& gpu, const compile_cache& cache,
                          tune_options t, bool& context_dead) {
  return over_families(opt, gpu.desc.cc_major, gpu.desc.cc_minor, t,
                       [&](const tune_options& f) { return tune_recovering(opt, s, gpu, cache, f, context_dead); });
}

tune_result compile_families(const options& opt, const problem& s, const compile_cache& cache, tune_options t) {
  const resource_limits arch = limits_for_arch(opt.arch);
  return over_families(opt, arch.cc_major, arch.cc_minor, t,
                       [&](const tune_options& f) { return compile_only(s, opt.arch, cache, f); });
}

std::string searched_families(const options& opt, int cc_major, int cc_minor) {
  std::vector<std::string> names;
  for (size_t i : runnable(opt, cc_major, cc_minor, true)) names.push_back(opt.families[i]);
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace attn
