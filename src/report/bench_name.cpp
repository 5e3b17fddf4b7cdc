#include "report/bench_name.hpp"

#include <charconv>

#include <fmt/format.h>

namespace attn {

std::string benchmark_name(const record& r) {
  // describe()'s pieces joined by '_' (a '/' would read as a benchmark filter's path).
  std::string text = r.family + '.';
  bool first = true;
  for (const auto& f : problem_fields()) {
    field_tag t = f.tag(r.shape);
    if (t.text.empty()) continue;
    for (char& c : t.text)
      if (c == '/') c = '-';
    if (!first && !t.glued) text += '_';
    text += t.text;
    first = false;
  }
  return text + '.' + config_name(r);
}

const char* const bench_usage =
    "usage: attn-bench RESULTS.csv [--device N] [--pass fwd|bwd|fwdbwd] [--benchmark_* options] (one results CSV)\n"
    "  Times each shape of RESULTS.csv (from attn-tune, a sweep or merge) with its tuned config: one Google\n"
    "  Benchmark per shape, GPU time from device events (L2 flushed), TFLOPS and the memory saving as counters.\n"
    "  --device N   the GPU to run on (default 0)\n"
    "  --pass P     the shapes of pass P: fwd (default), bwd (the backward's variants: dQ, dK, dV; TFLOPS count\n"
    "               2.5x the forward's FLOPs) or fwdbwd (both)";

bench_arguments parse_bench_arguments(const std::vector<std::string>& args) {
  bench_arguments out;
  std::vector<std::string> files;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a.rfind("--benchmark_min_time", 0) == 0) out.min_time_given = true;
    if (a.rfind("--benchmark_", 0) == 0) continue;
    if (a == "--device" || a.rfind("--device=", 0) == 0) {
      std::string v = a == "--device" ? (i + 1 < args.size() ? args[++i] : "") : a.substr(9);
      int d = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || d < 0)
        throw invalid_input(fmt::format("invalid --device '{}': expected a device ordinal (0, 1, ...)", v));
      out.device = d;
      continue;
    }
    if (a == "--pass" || a.rfind("--pass=", 0) == 0) {
      out.pass = parse_pass(a == "--pass" ? (i + 1 < args.size() ? args[++i] : "") : a.substr(7));
      continue;
    }
    if (a.rfind("--", 0) == 0) throw invalid_input(fmt::format("unknown option '{}'", a));
    files.push_back(a);
  }
  if (out.help) return out;
  if (files.size() != 1) throw invalid_input(bench_usage);
  out.results = files.front();
  return out;
}

}  // namespace attn
