// The subcommands: tune one shape (the default), sweep, export, check.
#include "cli/commands.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "backend/cuda/device.hpp"
#include "check/verdict.hpp"
#include "codegen/hiprtc.hpp"
#include "codegen/nvrtc.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "report/export.hpp"
#include "report/table.hpp"
#include "run/tuner.hpp"
#include "sweep/merge.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {

namespace {


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

compile_cache make_cache(const options& opt) {
  return compile_cache(opt.cache_dir, opt.kernels_dir.empty() ? kernel_sources::embedded()
                                                              : kernel_sources::from_directory(opt.kernels_dir));
}

tune_options make_tune_options(const options& opt, progress_line& progress) {
  tune_options t;
  t.family = opt.family;
  t.space = opt.space;
  t.jobs = opt.jobs;
  t.seed = opt.seed;
  t.timing.min_reps = opt.min_reps;
  t.timing.max_reps = opt.max_reps;
  t.timing.min_total_ms = opt.min_time_ms;
  t.progress = [&progress](const std::string& line) { progress(line); };
  for (const auto& c : opt.configs) t.configs.push_back(parse_config_name(c));
  return t;
}

// Runs `configs` of shape s in a fresh attn-tune process (same seed, so the same inputs and
// tolerance) and returns its records; empty when the child produced no CSV.
std::vector<record> run_configs_in_child(const options& opt, const shape& s, const std::vector<tile_config>& configs,
                                         uint64_t seed, int device) {
  const std::string csv = fmt::format("{}/attn-tune-isolated-{}-{}.csv",
                                      std::filesystem::temp_directory_path().string(), getpid(), seed);
  std::vector<std::string> args = {"/proc/self/exe",
                                   "--shape", fmt::format("{},{},{},{}", s.batch, s.heads, s.q_len, s.head_dim),
                                   "--kv-len", std::to_string(s.kv_len), "--kv-heads", std::to_string(s.kv_heads),
                                   "--dtype", to_string(s.dtype), "--layout", to_string(s.layout),
                                   "--family", opt.family, "--seed", std::to_string(seed),
                                   "--min-reps", std::to_string(opt.min_reps), "--max-reps", std::to_string(opt.max_reps),
                                   "--min-time-ms", fmt::format("{}", opt.min_time_ms), "--device", std::to_string(device),
                                   "--jobs", std::to_string(opt.jobs), "--top", "0", "--out", csv};
  if (s.causal) args.push_back("--causal");
  if (opt.cache_dir.empty()) args.push_back("--no-cache");
  else args.insert(args.end(), {"--cache-dir", opt.cache_dir});
  if (!opt.kernels_dir.empty()) args.insert(args.end(), {"--kernels-dir", opt.kernels_dir});
  std::string list;
  for (const auto& c : configs) list += (list.empty() ? "" : ",") + name(c);
  args.insert(args.end(), {"--configs", list});
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

// tune(), and when a variant kills the CUDA context beyond repair in this process, the variants
// it left are re-run in fresh processes, so one bad variant never ends the run. Once the
// context is dead, later shapes of this process are tuned in child processes too.
tune_result tune_recovering(const options& opt, const shape& s, const gpu_info& gpu, const compile_cache& cache,
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
  for (int round = 0; round < 32 && !pending.empty(); ++round) {
    if (t.progress) t.progress(fmt::format("re-running {} variant(s) in a fresh process", pending.size()));
    const auto child = run_configs_in_child(opt, s, pending, t.seed, gpu.ordinal);
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
  r.not_run.clear();
  r.best = choose_best(r.records);
  assign_ranks(r.records, r.best);
  r.best_cubin.clear();  // the winner may have been compiled in a child: see best_cubin_of()
  return r;
}

bool have_device(const options& opt) {
  std::string why;
  if (cuda_device_count(&why) > 0) return true;
  fmt::print(stderr,
             "error: no CUDA device available ({}).\nTiming needs a GPU. Without one, compile the "
             "space and see registers/spills/shared memory with:\n  attn-tune --compile-only --arch sm_90a --shape {},{},{},{}\n",
             why, opt.problem.batch, opt.problem.heads, opt.problem.q_len, opt.problem.head_dim);
  return false;
}

}  // namespace

int run_tune(const options& opt) {
  const compile_cache cache = make_cache(opt);
  progress_line progress;
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
    const std::string out = opt.out.empty() ? default_out_path("compile-only-" + opt.arch, opt.problem) : opt.out;
    check_writable(out);
    fmt::print("attn-tune {} --compile-only: {} for {} ({} {}); timing needs a GPU\n", opt.family,
               describe(opt.problem), opt.arch, hip ? "hiprtc" : "NVRTC", hip ? hiprtc_version() : nvrtc_version());
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

  if (hip)
    throw invalid_input(
        "running on AMD GPUs is not implemented yet: the HIP backend compiles the mfma family "
        "(attn-tune --backend hip --compile-only --arch gfx90a) but has no device, launch or timing path");
  if (!have_device(opt)) return 4;
  const gpu_info gpu = open_cuda_device(opt.device);
  const std::string out = opt.out.empty() ? default_out_path(gpu.desc.name, opt.problem) : opt.out;
  check_writable(out);
  fmt::print("attn-tune {}: {} on {} ({}, {} SMs, CUDA {}, NVRTC {}), seed {}\n", opt.family,
             describe(opt.problem), gpu.desc.name, gpu.desc.arch, gpu.desc.sm_count,
             gpu.desc.cuda_version, gpu.desc.nvrtc_version, opt.seed);
  bool context_dead = false;
  const tune_result r = tune_recovering(opt, opt.problem, gpu, cache, t, context_dead);
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



namespace {

std::string device_slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) slug += static_cast<char>(std::tolower(c));
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "device" : slug;
}

std::string best_path_for(const std::string& out) {
  const auto dot = out.rfind(".csv");
  return (dot == std::string::npos ? out : out.substr(0, dot)) + ".best.csv";
}

}  // namespace

int run_sweep(const options& opt) {
  std::vector<sweep_row> rows = read_sweep_file(opt.sweep_file);
  const size_t all_rows = rows.size();
  if (!opt.shard.empty()) rows = take_shard(rows, parse_shard(opt.shard, [](const char* n) { return std::getenv(n); }));
  if (!have_device(opt)) return 4;
  std::vector<int> devices = opt.devices.empty() ? std::vector<int>{opt.device} : opt.devices;
  std::string why;
  const int count = cuda_device_count(&why);
  for (int d : devices)
    if (d >= count) throw invalid_input(fmt::format("invalid --devices: device {} does not exist ({} found)", d, count));
  const gpu_info first = open_cuda_device(devices.front());
  const std::string stem = std::filesystem::path(opt.sweep_file).stem().string();
  const std::string out = !opt.out.empty() ? opt.out
                                           : fmt::format("results/{}/{}.csv", device_slug(first.desc.name), stem);
  std::vector<record> results;
  if (std::filesystem::exists(out)) {
    if (opt.resume) {
      results = read_csv(out);
      for (const auto& r : results)
        if (r.device.name != first.desc.name || r.device.sm_count != first.desc.sm_count)
          throw invalid_input(fmt::format("--resume: '{}' holds results from {} ({} SMs), this is {} ({} SMs)",
                                          out, r.device.name, r.device.sm_count, first.desc.name, first.desc.sm_count));
    } else if (!opt.force) {
      throw invalid_input(fmt::format("'{}' exists: --resume continues that sweep, --force overwrites it", out));
    }
  }
  check_writable(out);
  const std::vector<bool> done = rows_done(rows, results);
  const size_t todo = static_cast<size_t>(std::count(done.begin(), done.end(), false));
  fmt::print("sweep {}: {} of {} rows{}, {} already in {}, on {} GPU(s) ({})\n", opt.sweep_file, rows.size(),
             all_rows, opt.shard.empty() ? "" : fmt::format(" (shard {})", opt.shard), rows.size() - todo, out,
             devices.size(), first.desc.name);
  for (size_t i = 0; i < rows.size(); ++i)
    if (done[i]) fmt::print("[{}/{}] {}: already in {}, skipped\n", i + 1, rows.size(), rows[i].name, out);

  const compile_cache cache = make_cache(opt);
  const bool one_gpu = devices.size() == 1;
  progress_line progress;
  std::mutex mutex;  // guards results, the files, the counters and the terminal
  std::atomic<size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  int tuned = 0, failed = 0;
  // One worker per GPU; each takes the next row not yet done. Results are written after every
  // shape, atomically, so an interrupted sweep loses at most the shapes in flight.
  auto worker = [&](int device) {
    const gpu_info gpu = open_cuda_device(device);  // the thread's current device
    bool context_dead = false;
    for (size_t i; (i = next++) < rows.size();) {
      if (done[i]) continue;
      const sweep_row& row = rows[i];
      tune_options t = make_tune_options(opt, progress);
      t.progress = [&](const std::string& line) {
        if (!one_gpu) return;
        std::lock_guard lock(mutex);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string eta = tuned > 0 ? fmt::format(", ~{:.0f} s left", elapsed / tuned * (todo - tuned)) : "";
        progress(fmt::format("shape {}/{} {}: {}{}", i + 1, rows.size(), row.name, line, eta));
      };
      std::optional<tune_result> r;
      std::string error;
      try {
        r = tune_recovering(opt, row.problem, gpu, cache, t, context_dead);
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::lock_guard lock(mutex);
      progress.done();
      const std::string where = fmt::format("[{}/{}]{} {}", i + 1, rows.size(),
                                            one_gpu ? "" : fmt::format(" gpu {}", device), row.name);
      if (!r) {
        ++failed;
        fmt::print(stderr, "{} ({}:{}): skipped: {}\n", where, opt.sweep_file, row.line, error);
        continue;
      }
      results.insert(results.end(), r->records.begin(), r->records.end());
      ++tuned;
      write_csv(out, results);
      write_best_csv(best_path_for(out), best_table(results));
      if (r->best) {
        const record& b = r->records[*r->best];
        fmt::print("{} ({}): {} {:.1f} TFLOPS, {:.4f} ms\n", where, describe(row.problem), name(b.config),
                   b.tflops, b.median_ms);
      } else {
        ++failed;
        fmt::print("{}: no variant passed\n", where);
      }
    }
  };
  std::vector<std::thread> workers;
  std::vector<std::string> worker_errors(devices.size());
  for (size_t w = 0; w < devices.size(); ++w)
    workers.emplace_back([&, w] {
      try {
        worker(devices[w]);
      } catch (const std::exception& e) {
        worker_errors[w] = e.what();
      }
    });
  for (auto& w : workers) w.join();
  for (size_t w = 0; w < devices.size(); ++w)
    if (!worker_errors[w].empty()) throw std::runtime_error(fmt::format("GPU {}: {}", devices[w], worker_errors[w]));
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("sweep done: {} shapes tuned, {} failed, {:.1f} s; wrote {} and {}\n", tuned, failed, total,
             out, best_path_for(out));
  return failed > 0 ? 1 : 0;
}

int run_merge(const options& opt) {
  std::vector<std::vector<record>> parts;
  for (size_t i = 0; i < opt.merge_inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (std::error_code ec; std::filesystem::equivalent(opt.merge_inputs[i], opt.merge_inputs[j], ec))
        throw invalid_input(fmt::format("merge: '{}' is given twice", opt.merge_inputs[i]));
  for (const auto& path : opt.merge_inputs) {
    if (!std::filesystem::exists(path)) throw invalid_input(fmt::format("merge: no such file '{}'", path));
    parts.push_back(read_csv(path));
  }
  const auto merged = merge_results(parts, opt.merge_inputs);
  if (opt.out.empty()) throw invalid_input("merge needs --out");
  check_writable(opt.out);
  write_csv(opt.out, merged);
  write_best_csv(best_path_for(opt.out), best_table(merged));
  fmt::print("merged {} files, {} rows ({} shapes) into {}\n", parts.size(), merged.size(),
             best_table(merged).size(), opt.out);
  return 0;
}

int run_export(const options& opt) {
  if (!std::filesystem::exists(opt.input)) throw invalid_input(fmt::format("export: no such file '{}'", opt.input));
  const auto entries = export_entries(best_table(read_csv(opt.input)));
  if (entries.empty()) throw invalid_input(fmt::format("'{}' has no shape with an ok variant to export", opt.input));
  const std::string text = opt.format == "json"     ? export_json(entries)
                           : opt.format == "header" ? export_header(entries, opt.input)
                                                    : export_csv(entries);
  if (opt.out.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  check_writable(opt.out);
  const std::string tmp = opt.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
  }
  std::filesystem::rename(tmp, opt.out);
  fmt::print(stderr, "wrote {} entries ({}) to {}\n", entries.size(), opt.format, opt.out);
  return 0;
}

int run_check(const options& opt) {
  if (!std::filesystem::exists(opt.baseline))
    throw invalid_input(fmt::format("check: no such baseline '{}'", opt.baseline));
  const auto baseline = best_table(read_csv(opt.baseline));
  if (baseline.empty()) throw invalid_input(fmt::format("baseline '{}' has no shape with an ok variant", opt.baseline));
  if (!have_device(opt)) return 4;
  const gpu_info gpu = open_cuda_device(opt.device);
  const compile_cache cache = make_cache(opt);
  const std::string hash = fmt::format("{:016x}", cache.kernels().hash());
  progress_line progress;

  struct line {
    const record* base;
    std::optional<record> now;
    judgement j;
  };
  std::vector<line> lines;
  bool any_incomparable = false, any_failed = false;
  std::optional<std::string> change;
  for (size_t i = 0; i < baseline.size(); ++i) {
    const record& b = baseline[i].best;
    line l{&b, std::nullopt, {}};
    if (auto why = incomparable(b, gpu.desc)) {
      l.j = {verdict::not_comparable, 0, *why};
      any_incomparable = true;
      lines.push_back(l);
      continue;
    }
    if (!change) change = kernel_change(b, hash);
    tune_options t = make_tune_options(opt, progress);
    t.space = {{b.config.block_m}, {b.config.block_n}, {b.config.warps}, {b.config.stages}};
    t.progress = [&](const std::string& text) {
      progress(fmt::format("shape {}/{} {}: {}", i + 1, baseline.size(), describe(b.shape), text));
    };
    auto measure = [&]() -> record {
      tune_result r = tune(b.shape, gpu, cache, t);
      return r.records.front();
    };
    l.now = measure();
    std::optional<double> confirm;
    if (l.now->status == status::ok && suspect(b.median_ms, l.now->median_ms, opt.tolerance)) {
      t.seed += 1;  // fresh inputs for the second look
      const record again = measure();
      if (again.status == status::ok) confirm = again.median_ms;
    }
    progress.done();
    l.j = judge(b.median_ms, l.now->status, l.now->median_ms, confirm, opt.tolerance);
    any_failed |= l.j.v == verdict::regression || l.j.v == verdict::wrong;
    lines.push_back(l);
  }

  std::string md = fmt::format("## attn-tune check: {} on {}\n\n", opt.baseline, gpu.desc.name);
  if (change) md += fmt::format("Note: {}.\n\n", *change);
  md += fmt::format("| shape | config | baseline ms | now ms | ratio | verdict | why |\n|---|---|---|---|---|---|---|\n");
  std::string csv = "shape,config,baseline_ms,now_ms,ratio,verdict,why\n";
  fmt::print("\n{:<40} {:<16} {:>11} {:>11} {:>7}  {}\n", "shape", "config", "baseline ms", "now ms", "ratio", "verdict");
  for (const auto& l : lines) {
    const std::string shp = describe(l.base->shape);
    const std::string now = l.now && l.now->status == status::ok ? fmt::format("{:.4f}", l.now->median_ms) : "-";
    const std::string ratio = l.j.ratio > 0 ? fmt::format("{:.3f}", l.j.ratio) : "-";
    fmt::print("{:<40} {:<16} {:>11.4f} {:>11} {:>7}  {}{}\n", shp, name(l.base->config), l.base->median_ms, now,
               ratio, to_string(l.j.v), l.j.why.empty() ? "" : ": " + l.j.why);
    md += fmt::format("| {} | {} | {:.4f} | {} | {} | {} | {} |\n", shp, name(l.base->config), l.base->median_ms,
                      now, ratio, to_string(l.j.v), l.j.why);
    csv += fmt::format("\"{}\",{},{:.6f},{},{},{},\"{}\"\n", shp, name(l.base->config), l.base->median_ms, now,
                       ratio, to_string(l.j.v), l.j.why);
  }
  if (change) fmt::print("note: {}\n", *change);
  auto save = [](const std::string& path, const std::string& text) {
    if (path.empty()) return;
    check_writable(path);
    std::ofstream(path, std::ios::trunc) << text;
  };
  save(opt.csv_report, csv);
  save(opt.markdown_report, md);
  if (any_failed) {
    fmt::print(stderr, "check FAILED: a shape is slower than the baseline by more than {:.0f}% or wrong\n",
               opt.tolerance * 100);
    return 1;
  }
  if (any_incomparable) {
    fmt::print(stderr, "check: some baseline shapes were not compared (another device or family); "
                       "measure a baseline on this device\n");
    return 5;
  }
  fmt::print("check passed: {} shapes within {:.0f}% of the baseline\n", lines.size(), opt.tolerance * 100);
  return 0;
}
}  // namespace attn
