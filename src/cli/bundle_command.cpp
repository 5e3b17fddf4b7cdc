// attn-tune bundle --table T --arch sm_90a --out model.attnb: a tuned table and its configs'
// cubins in one file that libattn_tune loads without NVRTC (src/library/bundle.hpp). Parsed here,
// apart from the other commands' options, and dispatched from main before them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"
#include "library/bundle_builder.hpp"
#include "library/errors.hpp"
#include "report/atomic_file.hpp"
#include "report/csv.hpp"

namespace attn {

namespace {

constexpr const char* bundle_footer = R"(
The bundle holds the table and, for each of its entries tuned on a device of --arch's compute
capability (exact shapes of a results CSV or of the database, buckets of an export), the cubin
of its config, plus the fallback kernels of every dtype, head dim and causality the table holds.
libattn_tune loads it without NVRTC (context option `table` or `bundle`; Python:
attn_tune.context(bundle=...)), and refuses one built for another architecture or from other
kernel sources, or a corrupt one.

Examples:
  attn-tune export results/h200.csv --format csv --out h200.csv
  attn-tune bundle --table h200.csv --arch sm_90a --out model.attnb
  attn-tune bundle --table results/h200.csv --out model.attnb --force   # a results CSV, replacing model.attnb
  attn-tune bundle --table ~/.cache/attn-tune/tuned.sqlite --device-name 'NVIDIA H200' --out model.attnb

Exit codes: 0 written, 2 bad input (a table that cannot be read, an --arch NVRTC cannot target or
that the table has no entry for, an existing --out without --force), 3 a kernel does not compile.)";

// A table file as it is; the tuned-results database as `attn-tune export` reads it (one device's
// newest tuning of each shape; a library context given the database itself prefers a tuning of
// its own kernel sources, then the fastest), their winners written as a results CSV (the text the
// bundle carries, and what that CSV given as --table would give).
tuned_table bundle_table(const std::string& path, const std::string& device_name) {
  if (!looks_like_sqlite(path)) {
    if (!device_name.empty())
      throw invalid_input(fmt::format("--device-name '{}': '{}' is a table file, not the tuned-results database "
                                      "(a table's entries name their devices; --device-name picks one of a "
                                      "database's)",
                                      device_name, path));
    tuned_table table = tuned_table::load(path);
    for (const std::string& w : table.warnings()) print_warning(w);
    return table;
  }
  std::vector<record> winners;
  for (auto& r : read_results_noting(path, device_name))
    if (r.rank == 1) winners.push_back(std::move(r));
  if (winners.empty()) throw invalid_input(fmt::format("'{}' has no tuning with a variant that passed", path));
  return tuned_table::parse(csv_file_text(winners), path);
}

}  // namespace

int make_bundle(const std::string& table_path, const std::string& arch, const std::string& out,
                const std::string& cache_dir, bool force, const std::string& device_name) {
  refuse_overwrite(out, force, "pass --force to replace it, or choose another --out");
  const tuned_table table = bundle_table(table_path, device_name);
  limits_for_arch(arch);  // throws invalid_input naming a malformed --arch
  if (!nvrtc_supports(arch)) throw invalid_input(fmt::format("--arch {}: this NVRTC cannot compile for it", arch));
  std::vector<std::string> skipped;
  const auto targets = bundle_targets(table, arch, skipped);
  for (const auto& s : skipped) fmt::print(stderr, "skipped: {}\n", s);
  const compile_cache cache(cache_dir);
  const bundle b = build_bundle(table, targets, arch, cache);
  const std::string bytes = serialize_bundle(b);
  write_file_atomically(out, bytes);
  fmt::print("{}: {} kernels for {} ({:.1f} MiB), table {}\n", out, b.kernels.size(), arch,
             static_cast<double>(bytes.size()) / (1 << 20), table_path);
  return 0;
}

int run_bundle_main(int argc, char** argv) {
  CLI::App app("attn-tune bundle: a tuned table and its configs' cubins for one architecture, in one file that "
               "a service loads without NVRTC",
               "attn-tune bundle");
  app.footer(bundle_footer);
  std::string table, arch = "sm_90a", out, cache_dir = default_cache_dir(), device_name;
  bool force = false;
  app.add_option("--table", table,
                 "Tuned table: an export of `attn-tune export` (CSV or JSON), or a results CSV of attn-tune or "
                 "of a sweep (its rank-1 rows become exact tuned shapes), or the tuned-results database (SQLite; "
                 "read as attn-tune export reads it: one device's newest tuning of each shape)")
      ->required();
  app.add_option("--device-name", device_name,
                 "With a database that holds several devices' tunings: the device whose tunings to bundle, e.g. "
                 "'NVIDIA H200' (see attn-tune db list)");
  app.add_option("--arch", arch,
                 "Architecture the cubins are compiled for, the deploying GPU's: sm_80 (A100), sm_86, sm_89, "
                 "sm_90a (H100/H200; the wgmma and hopper families need it)")
      ->capture_default_str();
  app.add_option("--out", out, "Bundle to write (.attnb); written whole under a temporary name, then renamed")
      ->required();
  app.add_flag("--force", force, "Replace an existing --out (without it, an existing file is kept and nothing is done)");
  app.add_option("--cache-dir", cache_dir, "Compile cache folder: kernels compiled before are taken from it")
      ->capture_default_str();
  app.add_flag_callback("--no-cache", [&] { cache_dir.clear(); }, "Compile without the disk cache");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\nRun attn-tune bundle --help for usage.\n", e.what());
    return 2;
  }
  try {
    return make_bundle(table, arch, out, cache_dir, force, device_name);
  } catch (const invalid_input& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const table_error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 3;
  }
}

}  // namespace attn
