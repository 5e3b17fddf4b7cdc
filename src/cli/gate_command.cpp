// export (tuned configs as a dispatch table) and check (the CI performance gate).
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "check/verdict.hpp"
#include "codegen/backward.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "report/export.hpp"

namespace attn {

int run_export(const options& opt) {
  if (!std::filesystem::exists(opt.input)) throw invalid_input(fmt::format("export: no such file '{}'", opt.input));
  if (same_file(opt.out, opt.input))
    throw invalid_input(fmt::format("--out '{}' is the input itself: name another file", opt.out));
  if (!opt.out.empty() && opt.out != "-") {
    refuse_overwrite(opt.out, opt.force, "--force overwrites it");
    check_writable(opt.out);
  }
  refuse_best_table(opt.input);
  const auto entries = export_entries(best_table(read_results_noting(opt.input, opt.device_name)));
  if (entries.empty()) throw invalid_input(fmt::format("'{}' has no shape with an ok variant to export", opt.input));
  const std::string text = opt.format == "json"     ? export_json(entries)
                           : opt.format == "header" ? export_header(entries, opt.input)
                                                    : export_csv(entries);
  if (opt.out.empty() || opt.out == "-") {
    write_file_atomically("-", text);
    return 0;
  }
  write_file_atomically(opt.out, text);
  fmt::print(stderr, "wrote {} entries ({}) to {}\n", entries.size(), opt.format, opt.out);
  return 0;
}

int run_check(const options& opt) {
  if (!std::filesystem::exists(opt.baseline))
    throw invalid_input(fmt::format("check: no such baseline '{}'", opt.baseline));
  refuse_best_table(opt.baseline);
  std::vector<best_row> baseline;  // the shapes of the pass(es) --pass names
  {
    const auto all = best_table(read_results_noting(opt.baseline, opt.device_name));
    if (all.empty()) throw invalid_input(fmt::format("baseline '{}' has no shape with an ok variant", opt.baseline));
    const attention_pass pass = opt.problem.pass;
    for (const best_row& row : all)
      if (pass == attention_pass::fwdbwd ? row.best.shape.pass != attention_pass::fwdbwd : row.best.shape.pass == pass)
        baseline.push_back(row);
    if (baseline.empty())
      throw invalid_input(fmt::format("baseline '{}' has no shape of pass {} (--pass; its shapes are of other passes)",
                                      opt.baseline, to_string(pass)));
  }
  prepare_json(opt);
  for (const auto* report : {&opt.csv_report, &opt.markdown_report}) {
    if (*report == "-") reserve_stdout_for_data();
    if (!report->empty()) check_writable(*report);
  }
  if (!have_device(opt)) return 4;
  const gpu_info gpu = open_device(opt, opt.device);
  const compile_cache cache = make_cache(opt);
  progress_line progress(opt.verbosity);

  struct line {
    const record* base;
    std::optional<record> now;
    judgement j;
  };
  std::vector<line> lines;
  bool any_incomparable = false, any_failed = false;
  std::optional<record> hung;  // a recorded best that hung: nothing more can run on the device
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
    // The hash of the sources of the baseline's own family, as each record carries it.
    const bool backward = b.shape.pass == attention_pass::bwd;
    if (!change)
      change = kernel_change(b, fmt::format("{:016x}", cache.kernels().hash_of(backward ? backward_sources(b.backward)
                                                                                       : find_family(b.family).source_files)));
    tune_options t = make_tune_options(opt, progress);
    t.family = b.family;  // the recorded best, whichever family it came from
    if (backward) t.backward_configs = {b.backward};
    else t.space = only(b.config);
    t.progress = [&](const std::string& text) {
      progress(fmt::format("shape {}/{} {}: {}", i + 1, baseline.size(), describe(b.shape), text));
    };
    auto measure = [&]() -> record {
      tune_result r = tune(b.shape, gpu, cache, t);
      if (r.hung) hung = r.records[*r.hung];
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
    if (hung) break;
  }

  std::string md = fmt::format("## attn-tune check: {} on {}\n\n", opt.baseline, gpu.desc.name);
  if (change) md += fmt::format("Note: {}.\n\n", *change);
  md += fmt::format("| shape | config | baseline ms | now ms | ratio | verdict | why |\n|---|---|---|---|---|---|---|\n");
  std::string csv = "shape,config,baseline_ms,now_ms,ratio,verdict,why\n";
  std::vector<check_line> json_lines;
  fmt::print("\n{:<40} {:<16} {:>11} {:>11} {:>7}  {}\n", "shape", "config", "baseline ms", "now ms", "ratio", "verdict");
  for (const auto& l : lines) {
    const std::string shp = describe(l.base->shape);
    const std::string now = l.now && l.now->status == status::ok ? fmt::format("{:.4f}", l.now->median_ms) : "-";
    const std::string ratio = l.j.ratio > 0 ? fmt::format("{:.3f}", l.j.ratio) : "-";
    fmt::print("{:<40} {:<16} {:>11.4f} {:>11} {:>7}  {}{}\n", shp, config_name(*l.base), l.base->median_ms, now,
               ratio, to_string(l.j.v), l.j.why.empty() ? "" : ": " + l.j.why);
    md += fmt::format("| {} | {} | {:.4f} | {} | {} | {} | {} |\n", shp, config_name(*l.base), l.base->median_ms,
                      now, ratio, to_string(l.j.v), l.j.why);
    json_lines.push_back({shp, l.base->family, config_name(*l.base), to_string(l.j.v), l.j.why, l.base->median_ms,
                          l.now && l.now->status == status::ok ? std::optional(l.now->median_ms) : std::nullopt,
                          l.j.ratio > 0 ? std::optional(l.j.ratio) : std::nullopt});
    csv += fmt::format("{},{},{:.6f},{},{},{},{}\n", csv_field(shp, true), config_name(*l.base), l.base->median_ms,
                       now, ratio, to_string(l.j.v), csv_field(l.j.why, true));
  }
  if (change) fmt::print("note: {}\n", *change);
  auto save = [](const std::string& path, const std::string& text) {
    if (!path.empty()) write_file_atomically(path, text);
  };
  save(opt.csv_report, csv);
  write_json(opt, check_json(metadata_of(opt, &gpu), opt.baseline, json_lines, change));
  save(opt.markdown_report, md);
  if (hung) {
    fmt::print(stderr, "{}\n", hang_report(*hung, fmt::format("the {} shape(s) before it are compared above",
                                                              lines.size() - 1)));
    return exit_hung;
  }
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
