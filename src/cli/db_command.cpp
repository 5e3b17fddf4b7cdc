// attn-tune db list|show|forget|path: see and edit the tuned-results database.
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "report/table.hpp"

namespace attn {

namespace {

std::string shape_of(const tuning_entry& e) { return describe(e.key.shape); }

int64_t parse_id(const std::string& text) {
  try {
    size_t used = 0;
    const long long id = std::stoll(text, &used);
    if (used == text.size() && id > 0) return id;
  } catch (const std::exception&) {
  }
  throw invalid_input(fmt::format("invalid entry id '{}': expected a number from `attn-tune db list`", text));
}

}  // namespace

int run_db(const options& opt) {
  if (opt.db_action == "path") {
    fmt::print("{}\n", opt.db_path);
    return 0;
  }
  std::vector<int64_t> ids;
  for (const auto& text : opt.db_ids) ids.push_back(parse_id(text));
  // A reader creates nothing: no database is an empty list, and nothing to show or forget.
  if (!std::filesystem::exists(opt.db_path)) {
    if (opt.db_action != "list")
      throw invalid_input(fmt::format("database '{}' does not exist (a tuning creates it)", opt.db_path));
    fmt::print("{}: no database yet (a tuning creates it): 0 tunings\n", opt.db_path);
    return 0;
  }
  tuned_db db = opt.db_action == "forget" ? tuned_db::open(opt.db_path) : tuned_db::open_read_only(opt.db_path);
  if (opt.db_action == "list") {
    const auto entries = db.list();
    fmt::print("{}: {} tuning(s), schema version {}\n", db.path(), entries.size(), db.schema_version());
    for (const auto& e : entries)
      fmt::print("{:>4}  {}  {} ({} SMs, CUDA {})  {}  best {} {} {:.1f} TFLOPS {:.4f} ms (+-{:.1f}%)  [{}]\n", e.id,
                 e.tuned_at, e.key.device, e.key.sm_count, e.key.cuda_version, shape_of(e), e.best_family,
                 e.best_config, e.tflops, e.median_ms, 100 * e.noise, e.key.space);
    return 0;
  }
  if (ids.empty())
    throw invalid_input(fmt::format("attn-tune db {} needs entry ids (see attn-tune db list)", opt.db_action));
  int missing = 0;
  for (const int64_t id : ids) {
    if (opt.db_action == "forget") {
      if (db.forget(id)) fmt::print("forgot entry {}\n", id);
      else fmt::print(stderr, "no entry {} in {}\n", id, db.path()), ++missing;
      continue;
    }
    const auto e = db.get(id);
    if (!e) {
      fmt::print(stderr, "no entry {} in {}\n", id, db.path());
      ++missing;
      continue;
    }
    fmt::print("entry {}: {} on {} ({} SMs, CUDA {}, NVRTC {}), kernels {}, {}\ntuned {} by attn-tune {}{}\n\n{}\n",
               e->id, shape_of(*e), e->key.device, e->key.sm_count, e->key.cuda_version, e->key.nvrtc_version,
               e->key.kernel_hashes, e->key.space, e->tuned_at, e->version,
               e->sm_clock_max_mhz > 0 ? fmt::format("; SM clock {}-{} MHz, {} variant(s) measured throttled",
                                                     e->sm_clock_min_mhz, e->sm_clock_max_mhz, e->throttled)
                                       : "",
               format_table(e->records, static_cast<size_t>(opt.top)));
  }
  return missing > 0 ? 1 : 0;
}

}  // namespace attn
