// attn-tune bundle --table T --arch sm_90a --out model.attnb: a tuned table and its configs'
// cubins in one file that libattn_tune loads without NVRTC (src/library/bundle.hpp). Parsed here,
// apart from the other commands' options, and dispatched from main before them.
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"
#include "library/bundle_builder.hpp"
#include "library/errors.hpp"

namespace attn {

namespace {

int make_bundle(const std::string& table_path, const std::string& arch, const std::string& out,
                const std::string& cache_dir) {
  const tuned_table table = tuned_table::load(table_path);
  limits_for_arch(arch);  // throws invalid_input naming a malformed --arch
  if (!nvrtc_supports(arch)) throw invalid_input(fmt::format("--arch {}: this NVRTC cannot compile for it", arch));
  std::vector<std::string> skipped;
  const auto targets = bundle_targets(table, arch, skipped);
  for (const auto& s : skipped) fmt::print(stderr, "skipped: {}\n", s);
  const compile_cache cache(cache_dir);
  const bundle b = build_bundle(table, targets, arch, cache);
  const std::string bytes = serialize_bundle(b);
  const std::filesystem::path path(out);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", out));
  }
  std::filesystem::rename(tmp, out);
  fmt::print("{}: {} kernels for {} ({:.1f} MiB), table {}\n", out, b.kernels.size(), arch,
             static_cast<double>(bytes.size()) / (1 << 20), table_path);
  return 0;
}

}  // namespace

int run_bundle_main(int argc, char** argv) {
  CLI::App app("attn-tune bundle: a tuned table and its configs' cubins for one architecture, in one file");
  std::string table, arch = "sm_90a", out, cache_dir = default_cache_dir();
  app.add_option("--table", table, "Tuned table: an export (CSV or JSON) or a results CSV")->required();
  app.add_option("--arch", arch, "Architecture of the cubins (sm_80, sm_90a, ...)");
  app.add_option("--out", out, "Bundle to write (.attnb)")->required();
  app.add_option("--cache-dir", cache_dir, "Compile cache folder");
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
    return make_bundle(table, arch, out, cache_dir);
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
