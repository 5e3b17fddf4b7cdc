#include "report/bench_name.hpp"

#include <charconv>

#include <fmt/format.h>

namespace attn {

std::string benchmark_name(const record& r) {
  const shape& s = r.shape;
  std::string text = fmt::format("{}.B{}_H{}", r.family, s.batch, s.heads);
  if (s.kv_heads != s.heads) text += fmt::format("-{}", s.kv_heads);
  text += fmt::format("_N{}", s.q_len);
  if (s.kv_len != s.q_len) text += fmt::format("x{}", s.kv_len);
  text += fmt::format("_D{}_{}_{}{}.{}", s.head_dim, to_string(s.dtype), to_string(s.layout),
                      s.causal ? "_causal" : "", name(r.config));
  return text;
}

bench_arguments parse_bench_arguments(const std::vector<std::string>& args) {
  bench_arguments out;
  std::vector<std::string> files;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
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
    if (a.rfind("--", 0) == 0) throw invalid_input(fmt::format("unknown option '{}'", a));
    files.push_back(a);
  }
  if (files.size() != 1)
    throw invalid_input(
        "usage: attn-bench RESULTS.csv [--device N] [--benchmark_* options] (one results CSV)");
  out.results = files.front();
  return out;
}

}  // namespace attn
