// attn-tune: one try/catch; every error becomes a message naming the bad value and an exit code.
//   0 success, 1 nothing passed / compile failures / a regression, 2 bad input, 3 runtime failure,
//   4 no GPU, 5 a baseline that cannot be compared here, 6 a variant hung (the results so far are
//   written).
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backend/runtime.hpp"
#include "cli/commands.hpp"
#include "cli/terminal.hpp"

namespace {

// "error:", in red on a terminal (unless NO_COLOR).
std::string error_tag() {
  return attn::styled(attn::colour_for(stderr), fmt::emphasis::bold | fg(fmt::terminal_color::red), "error:");
}

int run(const attn::options& opt) {
  switch (opt.command) {
    case attn::command::tune: return attn::run_tune(opt);
    case attn::command::sweep: return attn::run_sweep(opt);
    case attn::command::export_table: return attn::run_export(opt);
    case attn::command::check: return attn::run_check(opt);
    case attn::command::merge: return attn::run_merge(opt);
    case attn::command::db: return attn::run_db(opt);
  }
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  // With a driver installed, NVRTC answers a compile it has seen before from the driver's compute
  // cache, and then ptxas does not run: its report (registers, spills, "Potential Performance
  // Loss") is missing from the log, and a "cold" tune is not cold. attn-tune keeps its own cache of
  // cubins with their logs and loads cubins only (nothing for the driver to JIT), so the driver's
  // cache only hides information here: off for this process, unless the user set the variable.
  setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/0);
  if (argc > 1 && std::string(argv[1]) == "bundle") return attn::run_bundle_main(argc - 1, argv + 1);
  attn::options opt;
  try {
    if (!attn::parse_options(argc, argv, opt)) return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{} {}\nRun with --help for usage.\n", error_tag(), e.what());
    return 2;
  } catch (const attn::invalid_input& e) {
    fmt::print(stderr, "{} {}\n", error_tag(), e.what());
    return 2;
  }
  try {
    return attn::leave_with(run(opt));
  } catch (const attn::kernel_hung& e) {
    fmt::print(stderr, "\n{} {}\n", error_tag(), e.what());
    return attn::leave_with(attn::exit_hung);
  } catch (const attn::invalid_input& e) {
    fmt::print(stderr, "\n{} {}\n", error_tag(), e.what());
    return attn::leave_with(2);
  } catch (const std::exception& e) {
    fmt::print(stderr, "\n{} {}\n", error_tag(), e.what());
    return attn::leave_with(3);
  }
}
