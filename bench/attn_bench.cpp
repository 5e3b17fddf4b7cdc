// attn-bench: one Google Benchmark per tuned shape of a results table, run with its tuned config.
//   attn-bench results/h200/ci-smoke.csv --benchmark_format=json > new.json
//   compare.py benchmarks old.json new.json        # Debian's libbenchmark-tools
// GPU time comes from device events (manual time, L2 flushed before each launch); TFLOPS and the
// memory saving are counters; device, clocks and driver are in the context. On an AMD GPU (HIP
// build) it runs the table's mfma rows; that path is compile-verified only.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "codegen/open_gpu.hpp"
#include "backend/runtime.hpp"
#include "report/bench_name.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "run/variant_runner.hpp"

namespace {

using namespace attn;

void run_one(benchmark::State& state, const record& tuned, const gpu_info& gpu, const compile_cache& cache) {
  std::unique_ptr<variant_runner> runner;
  try {
    runner = std::make_unique<variant_runner>(tuned, gpu, cache, 20261130);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  double total_s = 0;
  for (auto _ : state) {
    double s = 0;
    try {
      s = runner->time_once() / 1e3;
    } catch (const std::exception& e) {  // kernel_hung among them: an exception must not leave the loop
      state.SkipWithError(e.what());
      return;
    }
    state.SetIterationTime(s);
    total_s += s;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["TFLOPS"] = attention_flops(tuned.shape) * iterations / total_s / 1e12;
  state.counters["max_error"] = runner->verified().max_error;
  state.counters["memory_saving_x"] = runner->verified().memory_saving_ratio;
  state.counters["baseline_TFLOPS"] = tuned.tflops;
}

}  // namespace

int main(int argc, char** argv) {
  bench_arguments args;
  try {
    args = parse_bench_arguments(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const invalid_input& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (args.help) {
    std::printf("%s\n\nGoogle Benchmark's options:\n", bench_usage);
    std::fflush(stdout);
    char help[] = "--help";
    char* argv_help[] = {argv[0], help, nullptr};
    int argc_help = 2;
    benchmark::Initialize(&argc_help, argv_help);  // prints its options and exits 0
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  try {
    refuse_best_table(args.results);
    const auto table = best_table(read_csv(args.results));
    const device_runtime& rt = runtime_for(detect_backend());
    const bool hip = rt.kind() == backend::hip;
    std::string why;
    const int devices = rt.device_count(&why);
    if (devices == 0) {
      std::fprintf(stderr, "error: no CUDA device (%s): attn-bench times kernels on a GPU\n", why.c_str());
      return 4;
    }
    if (args.device >= devices) {
      std::fprintf(stderr, "error: invalid --device %d: %d device(s) found\n", args.device, devices);
      return 2;
    }
    static const gpu_info gpu = open_gpu(rt, args.device);
    static const compile_cache cache(default_cache_dir());
    benchmark::AddCustomContext("device", gpu.desc.name);
    benchmark::AddCustomContext("arch", gpu.desc.arch);
    benchmark::AddCustomContext(hip ? "cu_count" : "sm_count", std::to_string(gpu.desc.sm_count));
    benchmark::AddCustomContext("sm_clock_max_mhz", std::to_string(gpu.clock_mhz));
    benchmark::AddCustomContext("memory_clock_max_mhz", std::to_string(gpu.memory_clock_mhz));
    benchmark::AddCustomContext(hip ? "hip_driver" : "cuda_driver", gpu.driver_version);
    benchmark::AddCustomContext(hip ? "hip_runtime" : "cuda_runtime", gpu.desc.cuda_version);
    benchmark::AddCustomContext(hip ? "hiprtc" : "nvrtc", gpu.desc.nvrtc_version);
    benchmark::AddCustomContext("results", args.results);
    static std::vector<record> tuned;
    bool any_of_pass = false;
    for (const auto& row : table) {
      const attention_pass pass = row.best.shape.pass;
      const bool wanted = args.pass == attention_pass::fwdbwd ? pass != attention_pass::fwdbwd : pass == args.pass;
      any_of_pass |= wanted;
      if (wanted && find_family(row.best.family).backend == gpu.backend) tuned.push_back(row.best);
    }
    if (!any_of_pass)
      throw invalid_input(fmt::format("'{}' has no shape of pass {} (--pass)", args.results, to_string(args.pass)));
    for (const record& r : tuned) {
      if (r.device.name != gpu.desc.name)
        std::fprintf(stderr, "note: %s was tuned on %s, running on %s\n", describe(r.shape).c_str(),
                     r.device.name.c_str(), gpu.desc.name.c_str());
      // Names are stable across commits so that compare.py pairs them: shape and config.
      auto* b = benchmark::RegisterBenchmark(benchmark_name(r).c_str(),
                                             [&r](benchmark::State& st) { run_one(st, r, gpu, cache); })
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
      if (!args.min_time_given) b->MinTime(0.2);  // a given --benchmark_min_time wins
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (rt.hung()) {  // the benchmarks after the hung one were skipped; exit as attn-tune does (src/main.cpp)
      std::fprintf(stderr, "error: a variant hung (see its error above); the GPU stays busy until attn-bench exits\n");
      return leave_with(exit_hung);
    }
  } catch (const invalid_input& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
  return 0;
}
