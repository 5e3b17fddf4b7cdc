// attn-tune: one try/catch; every error becomes a message naming the bad value and an exit code.
//   0 success, 1 nothing passed / compile failures, 2 bad input, 3 runtime failure, 4 no GPU.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "backend/cuda/device.hpp"
#include "cli/options.hpp"
#include "codegen/nvrtc.hpp"
#include "report/csv.hpp"
#include "report/table.hpp"
#include "run/tuner.hpp"

namespace {

using namespace attn;

// Progress on stderr: rewritten in place on a terminal, one line per step otherwise.
struct progress_line {
  bool tty = isatty(fileno(stderr)) != 0;
  bool open = false;
  void operator()(const std::string& text) {
    if (tty) {
      fmt::print(stderr, "\r\033[K{}", text);
      open = true;
    } else {
      fmt::print(stderr, "{}\n", text);
    }
    std::fflush(stderr);
  }
  void done() {
    if (open) fmt::print(stderr, "\r\033[K");
    open = false;
  }
};

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

void print_summary(const options& opt, const tune_result& r, const std::string& out_path) {
  fmt::print("{}\n\n{}\n", r.pruning, format_table(r.records, static_cast<size_t>(opt.top)));
  fmt::print("compiled {} variants ({} from cache) in {:.1f} s; total {:.1f} s\n", r.compiled,
             r.cached, r.compile_seconds, r.total_seconds);
  fmt::print("wrote {}\n", out_path);
}

int run(const options& opt) {
  const compile_cache cache(opt.cache_dir, opt.kernels_dir.empty()
                                               ? kernel_sources::embedded()
                                               : kernel_sources::from_directory(opt.kernels_dir));
  progress_line progress;
  tune_options t;
  t.family = opt.family;
  t.space = opt.space;
  t.jobs = opt.jobs;
  t.seed = opt.seed;
  t.timing.min_reps = opt.min_reps;
  t.timing.max_reps = opt.max_reps;
  t.timing.min_total_ms = opt.min_time_ms;
  t.progress = [&](const std::string& line) { progress(line); };

  if (opt.compile_only) {
    if (!nvrtc_supports(opt.arch))
      throw invalid_input(fmt::format("NVRTC {} cannot compile for --arch {}", nvrtc_version(), opt.arch));
    const std::string out = opt.out.empty() ? default_out_path("compile-only-" + opt.arch, opt.problem) : opt.out;
    check_writable(out);
    fmt::print("attn-tune {} --compile-only: {} for {} (NVRTC {}); timing needs a GPU\n",
               opt.family, describe(opt.problem), opt.arch, nvrtc_version());
    const tune_result r = compile_only(opt.problem, opt.arch, cache, t);
    progress.done();
    write_csv(out, r.records);
    print_summary(opt, r, out);
    const auto failed = std::count_if(r.records.begin(), r.records.end(),
                                      [](const record& x) { return x.status == status::compile_error; });
    if (failed > 0) {
      fmt::print(stderr, "error: {} variant(s) failed to compile (see the message column of {})\n", failed, out);
      return 1;
    }
    return 0;
  }

  std::string why;
  if (cuda_device_count(&why) == 0) {
    fmt::print(stderr,
               "error: no CUDA device available ({}).\nTiming needs a GPU. Without one, compile the "
               "space and see registers/spills/shared memory with:\n  attn-tune --compile-only --arch sm_90a --shape {},{},{},{}\n",
               why, opt.problem.batch, opt.problem.heads, opt.problem.q_len, opt.problem.head_dim);
    return 4;
  }
  const gpu_info gpu = open_cuda_device(opt.device);
  const std::string out = opt.out.empty() ? default_out_path(gpu.desc.name, opt.problem) : opt.out;
  check_writable(out);
  fmt::print("attn-tune {}: {} on {} ({}, {} SMs, CUDA {}, NVRTC {}), seed {}\n", opt.family,
             describe(opt.problem), gpu.desc.name, gpu.desc.arch, gpu.desc.sm_count,
             gpu.desc.cuda_version, gpu.desc.nvrtc_version, opt.seed);
  const tune_result r = tune(opt.problem, gpu, cache, t);
  progress.done();
  write_csv(out, r.records);
  print_summary(opt, r, out);
  fmt::print("reference: naive {} error {:.3e}, allowed error 2x that + {:.0e} = {:.3e}; timing: median of >= {} reps "
             "(and >= {:.0f} ms), L2 flushed before each\n",
             to_string(opt.problem.dtype), r.lowp_error, 1e-4, r.allowed_error, opt.min_reps, opt.min_time_ms);
  if (!r.best) {
    fmt::print(stderr, "error: no variant passed the correctness check\n");
    return 1;
  }
  const record& b = r.records[*r.best];
  fmt::print("best: {} {}  {:.4f} ms (IQR {:.4f}, {} reps)  {:.1f} TFLOPS  max error {:.2e}\n",
             b.family, name(b.config), b.median_ms, b.iqr_ms, b.reps, b.tflops, b.max_error);
  fmt::print("memory: a materializing attention needs {} extra (fp32 scores + {} probabilities); "
             "the fused kernel needs {} (its LSE, measured): {:.0f}x less\n",
             human_bytes(double(b.materialized_bytes)), to_string(opt.problem.dtype),
             human_bytes(double(b.fused_extra_bytes)), b.memory_saving_ratio);
  if (!opt.dump_dir.empty()) {
    dump_best(opt.problem, gpu, cache, r, opt.seed + 1000, opt.dump_dir);
    fmt::print("dumped q, k, v, o, lse (.npy) to {}\n", opt.dump_dir);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  attn::options opt;
  try {
    if (!attn::parse_options(argc, argv, opt)) return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\nRun with --help for usage.\n", e.what());
    return 2;
  } catch (const attn::invalid_input& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  try {
    return run(opt);
  } catch (const attn::invalid_input& e) {
    fmt::print(stderr, "\nerror: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "\nerror: {}\n", e.what());
    return 3;
  }
}
