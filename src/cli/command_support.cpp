#include "cli/command_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "cli/option_checks.hpp"
#include "codegen/open_gpu.hpp"
#include "report/csv.hpp"
#include "run/nvml.hpp"

namespace attn {

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
  t.deterministic = opt.deterministic;
  t.timing.min_reps = opt.min_reps;
  t.timing.max_reps = opt.max_reps;
  t.timing.min_total_ms = opt.min_time_ms;
  t.timing.max_total_ms = opt.max_time_ms;
  t.timing.max_noise = opt.max_noise;
  t.search = parse_search(opt.search);
  t.objective = parse_objective(opt.objective);
  t.timing.regime = parse_regime(opt.regime);
  // NVML's energy counter moves in coarse steps: its power is read over a window of at least
  // half a second between two of its steps, after the timed repetitions.
  if (t.objective == objective::energy) t.timing.energy_window_ms = energy_window_ms;
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
  for (const auto& c : opt.configs) {  // each to its pass (check_config_names checked them)
    if (is_backward_config_name(c)) t.backward_configs.push_back(parse_backward_config(c));
    else t.configs.push_back(parse_config_name(c));
  }
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
  return open_gpu(runtime_for(opt.backend == "hip" ? backend::hip : backend::cuda), ordinal);
}

std::vector<record> read_csv_of_known_families(const std::string& path) {
  std::vector<record> rows = read_csv(path);
  for (const record& r : rows) {
    try {
      find_family(r.family);
    } catch (const invalid_input& e) {
      throw invalid_input(fmt::format("cannot read results CSV '{}': {}", path, e.what()));
    }
  }
  return rows;
}

std::string best_path_for(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool regular = !out.empty() && out != "-" && out.rfind("/dev/", 0) != 0 && out.rfind("/proc/", 0) != 0 &&
                       (!fs::exists(out, ec) || fs::is_regular_file(out, ec));
  if (!regular) return "";
  const fs::path p(out);
  std::string name = p.filename().string();
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0) name.resize(name.size() - 4);
  return (p.parent_path() / (name + ".best.csv")).string();
}

std::string hang_report(const record& hung, const std::string& kept) {
  return fmt::format(
      "error: {} {} on {} hung ({}); the run stopped there and {}. Leave that config out (--space, or "
      "--family {} --configs with the others) and run again; if it is only slow, raise --kernel-timeout-s",
      hung.family, config_name(hung), describe(hung.shape), hung.message, kept, hung.family);
}

std::string energy_note_of(const gpu_info& gpu, const nvml_monitor& nvml) {
  if (gpu.backend != backend::cuda) return "NVML, and so its energy counter, knows NVIDIA GPUs only";
  if (!nvml.available()) return nvml.note();
  return nvml.energy_note();
}

std::string energy_run_note(const options& opt, const std::string& energy_note) {
  if (!energy_note.empty() || opt.objective == "energy") return energy_note;
  return "not measured: --objective energy measures it";
}

void require_energy(const options& opt, const std::string& energy_note) {
  if (opt.objective == "energy" && !energy_note.empty())
    throw invalid_input(fmt::format("--objective energy ranks by NVML's energy counter, which this run cannot read "
                                    "({}); use --objective time",
                                    energy_note));
}

family_run family_run_of(const options& opt) {
  family_run run;
  run.families = opt.families;
  run.spaces = opt.spaces;
  run.families_defaulted = opt.families_defaulted;
  run.cache_dir = opt.cache_dir;
  run.kernels_dir = opt.kernels_dir;
  return run;
}

}  // namespace attn
