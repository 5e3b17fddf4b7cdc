#include "cli/command_options.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/problem.hpp"
#include "db/tuned_db.hpp"

namespace attn {

namespace {

const char* const device_name_help =
    "Read the results of this device (its name, as `attn-tune db list` shows it) when the input holds several";

// A sweep file's columns as read_sweep_file reads them, from the one field list (problem_fields()),
// so that the help names every column a field adds: those every file has (the first schema's),
// then the optional ones (a later schema's: a file may lack them).
std::string sweep_columns(bool optional) {
  std::vector<std::string> names;
  if (!optional) names.emplace_back("name");
  for (const problem_field& f : problem_fields())
    if (in_first_schema(f) != optional) names.emplace_back(f.sweep_column);
  return fmt::format("{}", fmt::join(names, ","));
}

// What a blank (or, in an optional column, missing) cell of the field takes.
std::string sweep_default(const problem_field& f) {
  if (f.required) return "a value in every row";
  if (f.follows >= 0) return problem_fields()[static_cast<size_t>(f.follows)].sweep_column;
  const std::string text = f.get(problem{});
  return text.empty() ? "none" : text;
}

std::string sweep_footer() {
  std::string text =
      "A sweep file is a CSV, one shape a row, under a header line naming its columns (in any order; a line\n"
      "starting with # is a comment). Columns every file has, and what a blank cell takes:\n"
      "  name          the shape's description\n";
  for (bool optional : {false, true}) {
    if (optional) text += "Optional columns (a file may leave them out), and what a missing or blank cell takes:\n";
    for (const problem_field& f : problem_fields())
      if (in_first_schema(f) != optional) text += fmt::format("  {:<13} {}\n", f.sweep_column, sweep_default(f));
  }
  return text + "Per-sequence lengths are joined by / (--seqlens 128,512 is 128/512); each column's meaning: "
                "docs/search-and-database.md (Sweeps).";
}

CLI::App* add_sweep(CLI::App& app, options& out) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", fmt::format("Tune every shape of a sweep file: a CSV of columns {}, optionally {} (sweep --help: "
                           "their defaults)",
                           sweep_columns(false), sweep_columns(true)));
  sweep->footer(sweep_footer());
  sweep->add_option("file", out.sweep_file, "Sweep file, e.g. sweeps/llm-prefill.csv")->required();
  sweep->add_option("--out", out.out, "Per-variant results CSV (default: results/<device>/<sweep name>.csv); "
                                      "the best table goes beside it as <name>.best.csv");
  sweep->add_flag("--resume", out.resume, "Keep the shapes already in --out and tune only the rest");
  sweep->add_flag("--force", out.force, "Overwrite an existing --out");
  sweep->add_option("--shard", out.shard, "Take a share of the rows: k/n, or auto (Slurm array / Kubernetes indexed job)");
  sweep->add_option("--devices", out.devices, "GPUs of this host to spread the shapes over, e.g. 0,1 (one worker per GPU)")
      ->delimiter(',');
  sweep->fallthrough();
  return sweep;
}

CLI::App* add_merge(CLI::App& app, options& out) {
  CLI::App* merge = app.add_subcommand("merge", "Combine the CSVs of sweep shards into one table (same device and kernel sources only)");
  merge->add_option("files", out.merge_inputs, "Shard CSVs")->required()->expected(1, -1);
  merge->add_option("--out", out.out, "Merged CSV (the best table goes beside it)")->required();
  merge->add_flag("--force", out.force, "Overwrite an existing --out (also one of the inputs)");
  return merge;
}

CLI::App* add_export(CLI::App& app, options& out) {
  CLI::App* exp = app.add_subcommand("export", "Write tuned configs as a dispatch table: csv, json or a C++ header with lookup()");
  exp->add_option("results", out.input,
                  "Results CSV (per-variant rows, from attn-tune or a sweep) or a tuned-results database")
      ->required();
  exp->add_option("--format", out.format, "csv, json or header")->capture_default_str();
  exp->add_option("--out", out.out, "Output file (default: standard output); never the input");
  exp->add_flag("--force", out.force, "Overwrite an existing --out");
  exp->add_option("--device-name", out.device_name, device_name_help);
  return exp;
}

CLI::App* add_check(CLI::App& app, options& out) {
  CLI::App* check = app.add_subcommand("check", "CI performance gate: re-run each baseline shape with its recorded best config");
  check->add_option("--baseline", out.baseline,
                    "Baseline results CSV (e.g. results/h200/ci-smoke.csv) or a tuned-results database")
      ->required();
  check->add_option("--tolerance", out.tolerance, "Allowed slowdown, as a fraction")->capture_default_str();
  check->add_option("--csv", out.csv_report, "Also write the side-by-side table as CSV");
  check->add_option("--markdown", out.markdown_report, "Also write it as Markdown (for a CI summary page)");
  check->add_option("--device-name", out.device_name, device_name_help);
  check->fallthrough();
  return check;
}

CLI::App* add_db(CLI::App& app, options& out) {
  CLI::App* db = app.add_subcommand("db", "See and edit the tuned-results database: list, show ID..., forget ID..., path");
  db->add_option("action", out.db_action, "list, show, forget or path")
      ->required()
      ->check(CLI::IsMember({"list", "show", "forget", "path"}));
  db->add_option("ids", out.db_ids, "Entry ids (from db list), for show and forget");
  db->fallthrough();
  return db;
}

CLI::App* add_bundle(CLI::App& app) {
  // Listed for --help only: main() hands `attn-tune bundle ...` to run_bundle_main, whose options
  // are its own, before this parser runs. Anywhere else on the line it is a mistake, said below.
  CLI::App* bundle = app.add_subcommand(
      "bundle", "Write a deployment bundle: a tuned table and its configs' cubins for one architecture, loaded by "
                "libattn_tune without NVRTC (attn-tune bundle --help)");
  bundle->prefix_command();
  return bundle;
}

}  // namespace

subcommands add_subcommands(CLI::App& app, options& out) {
  return {add_sweep(app, out), add_merge(app, out), add_export(app, out), add_check(app, out), add_db(app, out),
          add_bundle(app)};
}

void check_subcommands(const subcommands& c, options& out) {
  CLI::App *sweep = c.sweep, *exp = c.export_table, *check = c.check, *merge = c.merge, *db = c.db,
           *bundle = c.bundle;
  if (bundle->parsed())
    throw invalid_input("'bundle' must come first, with its own options: attn-tune bundle --table T --arch sm_90a "
                        "--out model.attnb (see attn-tune bundle --help)");
  if (sweep->parsed()) out.command = command::sweep;
  if (exp->parsed()) out.command = command::export_table;
  if (check->parsed()) out.command = command::check;
  if (merge->parsed()) out.command = command::merge;
  if (db->parsed()) out.command = command::db;
  if (db->parsed() && out.no_db)
    throw invalid_input(fmt::format("attn-tune db {} reads or edits the tuned-results database, which --no-db "
                                    "turns off; leave out --no-db (--db PATH chooses another database)",
                                    out.db_action));
  if (out.db_path.empty()) out.db_path = default_db_path();
  for (int d : out.devices)
    if (d < 0) throw invalid_input(fmt::format("invalid --devices: {} is not a device ordinal", d));
  if (exp->parsed() && out.format != "csv" && out.format != "json" && out.format != "header")
    throw invalid_input(fmt::format("invalid --format '{}': expected csv, json or header", out.format));
  if (check->parsed() && !(out.tolerance >= 0 && out.tolerance < 10))
    throw invalid_input(fmt::format("invalid --tolerance {}: expected a fraction such as 0.10", out.tolerance));
}

}  // namespace attn
