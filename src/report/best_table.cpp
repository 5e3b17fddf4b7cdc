#include "report/best_table.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "report/atomic_file.hpp"
#include "report/csv.hpp"

namespace attn {

std::vector<best_row> best_table(const std::vector<record>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const record*>> by_shape;
  for (const auto& r : rows) {
    const auto key = problem_key(r.shape);
    if (!by_shape.count(key)) order.push_back(key);
    if (r.status == status::ok) by_shape[key].push_back(&r);
  }
  std::vector<best_row> out;
  for (const auto& key : order) {
    auto ok = by_shape[key];
    if (ok.empty()) continue;
    // By rank when the file has ranks, by median otherwise (and among unranked rows).
    std::stable_sort(ok.begin(), ok.end(), [](const record* a, const record* b) {
      if (a->rank > 0 && b->rank > 0) return a->rank < b->rank;
      if ((a->rank > 0) != (b->rank > 0)) return a->rank > 0;
      return a->median_ms < b->median_ms;
    });
    best_row row{*ok[0], std::nullopt, 0};
    if (ok.size() > 1) {
      row.runner_up = *ok[1];
      row.runner_up_gap = ok[1]->median_ms / ok[0]->median_ms - 1;
    }
    out.push_back(std::move(row));
  }
  return out;
}

void write_best_csv(const std::string& path, const std::vector<best_row>& rows) {
  std::string out;
  for (const auto& f : problem_fields()) out += fmt::format("{},", f.name);
  out +=
      "device,cc,sm_count,family,best_config,tflops,median_ms,max_error,memory_saving_ratio,runner_up,"
      "runner_up_gap,kernel_hash\n";
  for (const auto& row : rows) {
    const record& b = row.best;
    for (const auto& f : problem_fields()) out += csv_field(f.get(b.shape)) + ',';
    out += fmt::format("{},{}.{},{},{},{},{:.2f},{:.6f},{:.3e},{:.1f},{},{},{}\n",
                       csv_field(b.device.name, true), b.device.cc_major,
                       b.device.cc_minor, b.device.sm_count, csv_field(b.family), config_name(b), b.tflops,
                       b.median_ms, b.max_error, b.memory_saving_ratio,
                       // The runner-up's family is named when it is not the winner's.
                       !row.runner_up                      ? ""
                       : row.runner_up->family == b.family ? config_name(*row.runner_up)
                                                           : row.runner_up->family + " " + config_name(*row.runner_up),
                       row.runner_up ? fmt::format("{:.4f}", row.runner_up_gap) : "", csv_field(b.kernel_hash));
  }
  write_file_atomically(path, out);
}

void refuse_best_table(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  if (!std::getline(in, header) || header.find(",best_config,") == std::string::npos) return;
  const std::string suffix = ".best.csv";
  const bool named = path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  throw invalid_input(fmt::format("'{}' is a best table (one row per shape), not a per-variant results CSV: pass {}",
                                  path,
                                  named ? fmt::format("'{}', the results it was made from",
                                                      path.substr(0, path.size() - suffix.size()) + ".csv")
                                        : "the results CSV it was made from (x.csv beside x.best.csv)"));
}

}  // namespace attn
