#include "report/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <string_view>

namespace attn {

namespace {

// Worse outcomes sort later; ok rows are the only ones whose timings are comparable.
int status_rank(status s) {
  switch (s) {
    case status::ok:
      return 0;
    case status::wrong:
      return 1;
    case status::launch_error:
      return 2;
    case status::compile_error:
      return 3;
    case status::compiled:
      return 4;
    case status::pruned:
      return 5;
  }
  return 6;
}

constexpr size_t table_width = 120;
constexpr size_t message_max = 40;
// Below this the message is too short to say anything, so the line may grow past the width.
constexpr size_t message_min = 24;
constexpr size_t message_gap = 2;

enum class align { left, right };

struct column {
  const char* title;
  align side;
  size_t gap;  ///< spaces before the column
};

// Numbers sit one space apart (their titles are mostly wider than the values), which leaves
// room for a useful part of the message within the table width. The optional columns (GB/s,
// %copy, mJ/call, TF/W) show only when a row has a value for them, so a compile-only table, or one
// without NVML's energy counter, stays as it was.
constexpr std::array<column, 15> columns{{
    {"#", align::right, 0},
    {"config", align::left, 2},
    {"ms", align::right, 2},
    {"+-%", align::right, 1},
    {"IQR", align::right, 1},
    {"TFLOPS", align::right, 1},
    {"GB/s", align::right, 1},
    {"%copy", align::right, 1},
    {"mJ/call", align::right, 1},
    {"TF/W", align::right, 1},
    {"error", align::right, 1},
    {"regs", align::right, 1},
    {"spills", align::right, 1},
    {"smem KiB", align::right, 1},
    {"status", align::left, 2},
}};

using cells = std::array<std::string, columns.size()>;
using column_mask = std::array<bool, columns.size()>;
constexpr size_t gbps_column = 6, copy_column = 7, energy_column = 8, efficiency_column = 9;
static_assert(std::string_view(columns[gbps_column].title) == "GB/s" &&
              std::string_view(columns[copy_column].title) == "%copy" &&
              std::string_view(columns[energy_column].title) == "mJ/call" &&
              std::string_view(columns[efficiency_column].title) == "TF/W");

std::string shorten(const std::string& text, size_t width) {
  std::string flat = text;
  for (char& c : flat)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (flat.size() <= width) return flat;
  if (width <= 3) return flat.substr(0, width);
  return flat.substr(0, width - 3) + "...";
}

// "-" marks a value that was never measured, so it is not mistaken for a measured zero.
cells make_cells(const record& r, size_t ok_rank) {
  const bool timed = r.status == status::ok || r.median_ms > 0;
  const bool checked = r.status == status::ok || r.status == status::wrong;
  const bool built = r.registers > 0;
  return {
      ok_rank ? fmt::format("{}", ok_rank) : "-",
      r.family + " " + config_name(r),
      timed ? fmt::format("{:.4f}", r.median_ms) : "-",
      timed && r.noise > 0 ? fmt::format("{:.1f}", 100 * r.noise) : "-",
      timed ? fmt::format("{:.4f}", r.iqr_ms) : "-",
      timed ? fmt::format("{:.1f}", r.tflops) : "-",
      r.gbps > 0 ? fmt::format("{:.0f}", r.gbps) : "-",
      r.copy_fraction > 0 ? fmt::format("{:.0f}", 100 * r.copy_fraction) : "-",
      r.joules_per_call > 0 ? fmt::format("{:.{}f}", 1000 * r.joules_per_call, r.joules_per_call < 0.01 ? 3 : 1) : "-",
      r.tflops_per_watt > 0 ? fmt::format("{:.2f}", r.tflops_per_watt) : "-",
      checked ? fmt::format("{:.2e}", r.max_error) : "-",
      built ? fmt::format("{}", r.registers) : "-",
      built ? fmt::format("{}", r.spill_bytes) : "-",
      r.shared_memory_bytes > 0
          ? fmt::format("{:.1f}", static_cast<double>(r.shared_memory_bytes) / 1024.0)
          : "-",
      // How an ok variant was timed: to full precision, or by the short screening only.
      to_string(r.status) + (r.measured == measurement::screened ? " screen"
                             : r.measured == measurement::full   ? " full"
                                                                 : ""),
  };
}

// Rank 1 slower than a later rank needs its reason beside it.
std::string message_of(const record& r) {
  if (!r.tied) return r.message;
  return "tied: within the noise of a faster one, simpler" + (r.message.empty() ? "" : "; " + r.message);
}

void append_line(std::string& out, const cells& row, const std::array<size_t, columns.size()>& widths,
                 const column_mask& shown, const std::string& message) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!shown[i]) continue;
    line.append(columns[i].gap, ' ');
    if (columns[i].side == align::right)
      line += fmt::format("{:>{}}", row[i], widths[i]);
    else
      line += fmt::format("{:<{}}", row[i], widths[i]);
  }
  if (!message.empty()) line += std::string(message_gap, ' ') + message;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

}  // namespace

std::vector<size_t> rank_order(const std::vector<record>& rows) {
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable, so rows that tie keep the order they were produced in and repeated runs print
  // the same table.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const record& x = rows[a];
    const record& y = rows[b];
    const int rx = status_rank(x.status);
    const int ry = status_rank(y.status);
    if (rx != ry) return rx < ry;
    // The tuner's ranks (a near-tie goes to the simpler config) win over raw medians.
    if (x.status == status::ok && x.rank > 0 && y.rank > 0) return x.rank < y.rank;
    if (x.status == status::ok) return x.median_ms < y.median_ms;
    return false;
  });
  return order;
}

std::string format_table(const std::vector<record>& rows, size_t limit) {
  const std::vector<size_t> order = rank_order(rows);
  const size_t shown = limit == 0 ? order.size() : std::min(limit, order.size());

  std::vector<cells> body;
  body.reserve(shown);
  std::array<size_t, columns.size()> widths{};
  for (size_t i = 0; i < columns.size(); ++i) widths[i] = std::string_view(columns[i].title).size();
  size_t ok_count = 0;
  column_mask visible;
  visible.fill(true);
  for (size_t i : {gbps_column, copy_column, energy_column, efficiency_column}) visible[i] = false;
  for (size_t k = 0; k < shown; ++k) {
    const record& r = rows[order[k]];
    body.push_back(make_cells(r, r.status == status::ok ? ++ok_count : 0));
    for (size_t i = 0; i < columns.size(); ++i)
      widths[i] = std::max(widths[i], body.back()[i].size());
    visible[gbps_column] = visible[gbps_column] || r.gbps > 0;
    visible[copy_column] = visible[copy_column] || r.copy_fraction > 0;
    visible[energy_column] = visible[energy_column] || r.joules_per_call > 0;
    visible[efficiency_column] = visible[efficiency_column] || r.tflops_per_watt > 0;
  }
  size_t used = 0;
  for (size_t i = 0; i < columns.size(); ++i)
    if (visible[i]) used += columns[i].gap + widths[i];
  used += message_gap;
  const size_t message_width =
      std::clamp(used < table_width ? table_width - used : size_t{0}, message_min, message_max);

  std::string out;
  cells header;
  for (size_t i = 0; i < columns.size(); ++i) header[i] = columns[i].title;
  append_line(out, header, widths, visible, "message");
  out += std::string(std::min(used + message_width, table_width), '-');
  out += '\n';
  for (size_t k = 0; k < shown; ++k)
    append_line(out, body[k], widths, visible, shorten(message_of(rows[order[k]]), message_width));
  if (shown < order.size()) {
    const size_t left_out = order.size() - shown;
    out += fmt::format("({} more row{} not shown)\n", left_out, left_out == 1 ? "" : "s");
  }
  return out;
}

}  // namespace attn
