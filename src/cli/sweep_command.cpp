// sweep (many shapes, resumable, several GPUs, shards) and merge (shards back into one table).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "cli/resume_check.hpp"
#include "codegen/compile_pool.hpp"
#include "db/shapes_to_tune.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "run/phases.hpp"
#include "run/copy_bandwidth.hpp"
#include "run/nvml.hpp"
#include "run/tuner.hpp"
#include "sweep/merge.hpp"
#include "sweep/sweep_file.hpp"

namespace attn {

namespace {

// What a sweep writing `out` starts from: nothing for a new file, the file's records with --resume
// (each must pass `check`, which returns why a record does not belong). An existing file is never
// replaced without --resume or --force, and the sweep file never is.
std::vector<record> results_so_far(const options& opt, const std::string& out, const resource_limits& limits,
                                   const std::function<std::string(const record&)>& check) {
  if (same_file(out, opt.sweep_file))
    throw invalid_input(fmt::format("--out '{}' is the sweep file itself: name a results CSV", out));
  check_json_apart(opt, out);
  std::vector<record> results;
  if (is_existing_file(out)) {
    if (opt.resume) {
      results = read_csv_of_known_families(out);
      for (const auto& r : results)
        if (const std::string why = check(r); !why.empty())
          throw invalid_input(fmt::format("--resume: '{}' {}", out, why));
      if (const std::string why = resume_mismatch(opt, results, limits); !why.empty())
        throw invalid_input(fmt::format("--resume: '{}' {}; resume with the --family and --space it was made with, "
                                        "or --force to start over",
                                        out, why));
    } else {
      refuse_overwrite(out, opt.force, "--resume continues that sweep, --force overwrites it");
    }
  }
  check_writable(out);
  return results;
}

// No GPU: every shape's space compiled for --arch (a whole workload checked in CI), one CSV.
int compile_sweep(const options& opt, const std::vector<sweep_row>& rows) {
  const std::string out = !opt.out.empty() ? opt.out
                                           : fmt::format("results/compile-only-{}-{}.csv", opt.arch,
                                                         std::filesystem::path(opt.sweep_file).stem().string());
  std::vector<record> results = results_so_far(opt, out, limits_for_arch(opt.arch), [&](const record& r) {
    return r.device.name == "(compile-only)" && r.device.arch == opt.arch
               ? std::string()
               : fmt::format("holds results of {} ({}), not of a compile-only sweep for {}", r.device.name,
                             r.device.arch, opt.arch);
  });
  const std::vector<bool> done = rows_done(rows, results);
  const compile_cache cache = make_cache(opt);
  progress_line progress(opt.verbosity);
  int failed = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (done[i]) {
      fmt::print("[{}/{}] {}: already in {}, skipped\n", i + 1, rows.size(), rows[i].name, out);
      continue;
    }
    tune_options t = make_tune_options(opt, progress);
    t.progress = [&](const std::string& line) {
      progress(fmt::format("shape {}/{} {}: {}", i + 1, rows.size(), rows[i].name, line));
    };
    tune_result r;
    try {
      r = compile_families(family_run_of(opt), opt.arch, rows[i].problem, cache, t);
    } catch (const invalid_input& e) {  // e.g. no config of the space fits this shape: say so, go on
      progress.done();
      ++failed;
      fmt::print(stderr, "[{}/{}] {} ({}:{}): skipped: {}\n", i + 1, rows.size(), rows[i].name, opt.sweep_file,
                 rows[i].line, e.what());
      continue;
    }
    progress.done();
    const auto errors = std::count_if(r.records.begin(), r.records.end(),
                                      [](const record& x) { return x.status == status::compile_error; });
    failed += errors > 0;
    fmt::print("[{}/{}] {} ({}): {} compiled ({} from cache), {} pruned, {} failed\n", i + 1, rows.size(),
               rows[i].name, describe(rows[i].problem), r.compiled, r.cached,
               std::count_if(r.records.begin(), r.records.end(),
                             [](const record& x) { return x.status == status::pruned; }),
               errors);
    results.insert(results.end(), r.records.begin(), r.records.end());
    if (out != "-") write_csv(out, results);
  }
  if (out == "-") write_csv(out, results);
  write_json(opt, results_json(metadata_of(opt, nullptr), results));
  fmt::print("compile-only sweep for {}: {} shapes, {} with compile errors or skipped; wrote {}\n", opt.arch,
             rows.size(), failed, out);
  return failed > 0 ? 1 : 0;
}

}  // namespace

int run_sweep(const options& opt) {
  if (opt.out == "-") reserve_stdout_for_data();
  prepare_json(opt);
  std::vector<std::string> repeats;
  std::vector<sweep_row> rows = distinct_shapes(
      with_passes(read_sweep_file(opt.sweep_file),
                  opt.pass_given ? std::optional<attention_pass>(opt.problem.pass) : std::nullopt),
      repeats);
  for (const auto& r : repeats) fmt::print("{}: tuned once\n", r);
  const size_t all_rows = rows.size();
  if (!opt.shard.empty()) rows = take_shard(rows, parse_shard(opt.shard, [](const char* n) { return std::getenv(n); }));
  if (rows.empty()) {  // e.g. shard 5/8 of a 4-row file: said, and no file is written
    fmt::print(stderr, "sweep {}: shard {} of its {} rows is empty: nothing to tune, no file written\n", opt.sweep_file,
               opt.shard, all_rows);
    return 0;
  }
  if (opt.compile_only) return compile_sweep(opt, rows);
  if (!have_device(opt)) return 4;
  std::vector<int> devices = opt.devices.empty() ? std::vector<int>{opt.device} : opt.devices;
  const int count = runtime_of(opt)->device_count(nullptr);
  for (int d : devices)
    if (d >= count) throw invalid_input(fmt::format("invalid --devices: device {} does not exist ({} found)", d, count));
  const gpu_info first = open_device(opt, devices.front());
  const std::string stem = std::filesystem::path(opt.sweep_file).stem().string();
  const std::string out = !opt.out.empty() ? opt.out
                                           : fmt::format("results/{}/{}.csv", device_slug(first.desc.name), stem);
  const std::vector<record> kept = results_so_far(opt, out, first.limits, [&](const record& r) {
    return r.device.name == first.desc.name && r.device.sm_count == first.desc.sm_count
               ? std::string()
               : fmt::format("holds results from {} ({} SMs), this is {} ({} SMs)", r.device.name,
                             r.device.sm_count, first.desc.name, first.desc.sm_count);
  });
  std::vector<record> results = kept;
  std::vector<bool> done = rows_done(rows, results);
  // Shapes the database answers (tuned on this device, with these kernels and this space) are
  // skipped, their entry's records going into the results; --retune tunes them again.
  std::optional<tuned_db> db = open_run_db(opt);
  const compile_cache key_cache = make_cache(opt);
  const searched_space space = searched_space_of(opt);
  const nvml_monitor first_nvml = nvml_monitor::open(first.pci_bus_id, first.ordinal);
  const std::string energy_note = energy_note_of(first, first_nvml);
  require_energy(opt, energy_note);
  if (first.backend == backend::cuda && !energy_note.empty()) fmt::print(stderr, "{}\n", energy_note);
  const device_desc keyed = with_driver(first.desc, first_nvml);
  auto key_of = [&](const problem& s) { return make_tuning_key(keyed, s, space, key_cache.kernels()); };
  std::vector<problem> shapes;
  for (const auto& row : rows) shapes.push_back(row.problem);
  std::vector<bool> from_db(rows.size());
  const auto answered = shapes_to_tune(shapes, db ? &*db : nullptr, key_of, opt.retune);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (done[i] || !answered[i]) continue;
    from_db[i] = true;
    fmt::print("[{}/{}] {}: in the database (tuned {}), skipped; --retune measures it again\n", i + 1, rows.size(),
               rows[i].name, answered[i]->tuned_at);
    results.insert(results.end(), answered[i]->records.begin(), answered[i]->records.end());
    done[i] = true;
  }
  const size_t todo = static_cast<size_t>(std::count(done.begin(), done.end(), false));
  fmt::print("sweep {}: {} of {} rows{}, {} already in {}, on {} GPU(s) ({})\n", opt.sweep_file, rows.size(),
             all_rows, opt.shard.empty() ? "" : fmt::format(" (shard {})", opt.shard), rows.size() - todo, out,
             devices.size(), first.desc.name);
  for (size_t i = 0; i < rows.size(); ++i)
    if (done[i] && !from_db[i]) fmt::print("[{}/{}] {}: already in {}, skipped\n", i + 1, rows.size(), rows[i].name, out);

  const compile_cache cache = make_cache(opt);
  const bool one_gpu = devices.size() == 1;
  progress_line progress(opt.verbosity);
  std::mutex mutex;  // guards results, the files, the counters and the terminal
  std::atomic<size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  int tuned = 0, failed = 0;
  std::vector<std::string> hangs;  // hang_report of each shape where a variant hung
  std::vector<copy_bandwidth> copies(devices.size());  // each worker's GPU's
  // One worker per GPU; each takes the next row not yet done. Results are written after every
  // shape, atomically, so an interrupted sweep loses at most the shapes in flight.
  auto worker = [&](int device, copy_bandwidth& copy) {
    const gpu_info gpu = open_device(opt, device);  // the thread's current device
    const nvml_monitor nvml = nvml_monitor::open(gpu.pci_bus_id, gpu.ordinal);
    copy = measure_copy_bandwidth(runtime_of(gpu));
    if (opt.verbosity != verbosity::quiet) {
      std::lock_guard lock(mutex);
      fmt::print("{}{}\n", one_gpu ? "" : fmt::format("gpu {}: ", device), describe(copy));
    }
    bool context_dead = false;
    for (size_t i; (i = next++) < rows.size();) {
      if (done[i]) continue;
      if (runtime_of(gpu).hung()) break;  // a hang on any GPU ends the run: hung kernels keep running
      const sweep_row& row = rows[i];
      tune_options t = make_tune_options(opt, progress);
      if (gpu.backend == backend::cuda) t.clocks = &nvml;
      t.copy_gbps = copy.gbps;
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
        r = tune_families(family_run_of(opt), row.problem, gpu, cache, t, context_dead);
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
      if (db && r->best && !r->hung) remember(*db, key_of(row.problem), r->records);
      if (const std::string w = throttle_warning(r->records); !w.empty()) fmt::print(stderr, "{}: {}\n", where, w);
      if (r->hung)
        hangs.push_back(hang_report(r->records[*r->hung], fmt::format("what it measured is in {} (--resume goes "
                                                                      "on with the shapes not in it yet)", out)));
      ++tuned;
      if (out != "-") {  // standard output gets the whole file once, at the end
        write_csv(out, results);
        if (const std::string best = best_path_for(out); !best.empty()) write_best_csv(best, best_table(results));
      }
      if (r->best) {
        const record& b = r->records[*r->best];
        fmt::print("{} ({}): {} {} {:.1f} TFLOPS, {:.4f} ms\n", where, describe(row.problem), b.family,
                   config_name(b), b.tflops, b.median_ms);
      } else {
        ++failed;
        fmt::print("{}: no variant passed\n", where);
      }
      if (opt.verbosity != verbosity::quiet) fmt::print("    {}\n", phase_summary(*r));
    }
  };
  std::vector<std::thread> workers;
  std::vector<std::string> worker_errors(devices.size());
  for (size_t w = 0; w < devices.size(); ++w)
    workers.emplace_back([&, w] {
      try {
        worker(devices[w], copies[w]);
      } catch (const std::exception& e) {
        worker_errors[w] = e.what();
      }
    });
  for (auto& w : workers) w.join();
  for (size_t w = 0; w < devices.size(); ++w)
    if (!worker_errors[w].empty()) throw std::runtime_error(fmt::format("GPU {}: {}", devices[w], worker_errors[w]));
  if (out == "-") write_csv(out, results);
  run_metadata meta = metadata_of(opt, &first);
  meta.copy = copies.front();
  meta.energy_note = energy_run_note(opt, energy_note);
  write_json(opt, results_json(meta, results));
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string best = best_path_for(out);
  fmt::print("sweep done: {} shapes tuned, {} failed, {:.1f} s; wrote {}{}\n", tuned, failed, total, out,
             best.empty() ? "" : " and " + best);
  for (const auto& h : hangs) fmt::print(stderr, "{}\n", h);
  if (!hangs.empty()) return exit_hung;
  return failed > 0 ? 1 : 0;
}

int run_merge(const options& opt) {
  if (opt.out == "-") reserve_stdout_for_data();
  std::vector<std::vector<record>> parts;
  for (size_t i = 0; i < opt.merge_inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (std::error_code ec; std::filesystem::equivalent(opt.merge_inputs[i], opt.merge_inputs[j], ec))
        throw invalid_input(fmt::format("merge: '{}' is given twice", opt.merge_inputs[i]));
  for (const auto& path : opt.merge_inputs) {
    if (!std::filesystem::exists(path)) throw invalid_input(fmt::format("merge: no such file '{}'", path));
    parts.push_back(read_csv_of_known_families(path));
  }
  const auto merged = merge_results(parts, opt.merge_inputs);
  if (opt.out.empty()) throw invalid_input("merge needs --out");
  for (const auto& path : opt.merge_inputs)
    if (same_file(opt.out, path) && !opt.force)
      throw invalid_input(fmt::format("--out '{}' is one of the inputs: --force replaces it with the merged table", path));
  refuse_overwrite(opt.out, opt.force, "--force overwrites it");
  check_writable(opt.out);
  write_csv(opt.out, merged);
  const auto best = best_table(merged);
  if (const std::string path = best_path_for(opt.out); !path.empty()) write_best_csv(path, best);
  fmt::print("merged {} files, {} rows ({} shapes) into {}\n", parts.size(), merged.size(),
             best.size(), opt.out);
  return 0;
}

}  // namespace attn
