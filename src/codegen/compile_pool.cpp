#include "codegen/compile_pool.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "codegen/nvrtc.hpp"

namespace attn {

resource_limits limits_for_arch(const std::string& arch) {
  if (arch.rfind("gfx", 0) == 0) {  // AMD: 64 KiB of LDS and 1024 threads per workgroup
    resource_limits l;
    l.shared_memory_per_block = 64 * 1024;
    l.max_threads_per_block = 1024;
    l.cc_major = l.cc_minor = 0;
    return l;
  }
  // The last digit is the minor version, the rest the major: sm_90a is 9.0, sm_120 is 12.0.
  static const std::regex re(R"(sm_(\d+)(\d)a?)");
  std::smatch m;
  if (!std::regex_match(arch, m, re))
    throw invalid_input(fmt::format("invalid --arch '{}': expected sm_80, sm_90, sm_90a, ... or gfx90a", arch));
  resource_limits l;
  l.cc_major = std::stoi(m[1].str());
  l.cc_minor = std::stoi(m[2].str());
  const int cc = l.cc_major * 10 + l.cc_minor;
  // Opt-in shared memory per block (CUDA programming guide, compute capabilities table).
  if (cc == 80 || cc == 87) l.shared_memory_per_block = 163 * 1024;
  else if (cc == 86 || cc == 89 || cc >= 120) l.shared_memory_per_block = 99 * 1024;
  else if (cc >= 90) l.shared_memory_per_block = 227 * 1024;
  else l.shared_memory_per_block = 48 * 1024;
  return l;
}

void compile_variants(std::vector<variant>& out, std::vector<size_t> to_compile, const std::vector<std::string>& sources,
                      const compile_target& target, const compile_cache& cache, int jobs,
                      const compile_progress& progress, const compiled_variant& compiled_one) {
  // Variants whose sources are the same text (the hopper family's persistent bit only changes the
  // launch) are compiled once: the first of them compiles, the rest copy its result.
  std::map<std::string, size_t> first_with;
  std::vector<std::pair<size_t, size_t>> copies;  // (variant, the variant it copies)
  {
    std::vector<size_t> unique;
    for (size_t i : to_compile) {
      const auto [it, inserted] = first_with.emplace(sources[i], i);
      if (inserted) unique.push_back(i);
      else copies.emplace_back(i, it->second);
    }
    to_compile = std::move(unique);
  }
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(std::max<size_t>(1, to_compile.size())));

  std::atomic<size_t> next{0};
  std::atomic<int> done{0}, cached{0};
  std::mutex progress_mutex;
  auto worker = [&] {
    for (size_t i; (i = next++) < to_compile.size();) {
      variant& v = out[to_compile[i]];
      auto compiled =
          compile_with_cache(cache, sources[to_compile[i]], target.arch, target.options, target.backend);
      v.rec.cached = compiled.cached;
      v.rec.compile_ms = compiled.result.milliseconds;
      v.rec.registers = compiled.result.registers;
      v.rec.spill_bytes = compiled.result.spill_bytes;
      if (compiled.result.ok) {
        v.rec.status = status::compiled;
        v.rec.message = ptxas_performance_warning(compiled.result.log);  // e.g. serialized wgmma
        v.cubin = std::move(compiled.result.cubin);
      } else {
        v.rec.status = status::compile_error;
        v.rec.message = compiled.result.log;
      }
      const int d = ++done, c = cached += compiled.cached ? 1 : 0;
      std::lock_guard lock(progress_mutex);
      if (compiled_one) compiled_one(v.rec, compiled.result.log);
      if (progress) progress(d, static_cast<int>(to_compile.size()), c);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  for (const auto& [i, from] : copies) {
    const record& r = out[from].rec;
    variant& v = out[i];
    v.rec.status = r.status;
    v.rec.message = r.message;
    v.rec.cached = r.cached;
    v.rec.compile_ms = 0;
    v.rec.registers = r.registers;
    v.rec.spill_bytes = r.spill_bytes;
    v.cubin = out[from].cubin;
    if (compiled_one) compiled_one(v.rec, "");
  }
}

std::vector<variant> build_variants(const kernel_family& family, const problem& s,
                                    const std::vector<tile_config>& configs, const device_desc& device,
                                    const resource_limits& limits, const compile_cache& cache,
                                    int jobs, const compile_progress& progress,
                                    const compiled_variant& compiled_one) {
  if (auto why = problem_refusal(family, s)) throw invalid_input(*why);
  std::vector<variant> out;
  std::vector<size_t> to_compile;
  for (const auto& config : configs) {
    variant v;
    v.rec.device = device;
    v.rec.shape = s;
    v.rec.family = family.name;
    v.rec.kernel_hash = fmt::format("{:016x}", cache.kernels().hash_of(family.source_files));
    v.rec.config = config;
    v.rec.shared_memory_bytes = family.shared_memory_bytes(config, s);
    v.rec.materialized_bytes = materialized_extra_bytes(s);
    if (auto why = missing_axis(family, config)) {  // e.g. --configs m128_n64_w8_s2_k2 on wgmma
      v.rec.status = status::pruned;
      v.rec.message = *why;
    } else if (auto why = family.reject_reason(config, s, limits)) {
      v.rec.status = status::pruned;
      v.rec.message = *why;
    } else {
      to_compile.push_back(out.size());
    }
    out.push_back(std::move(v));
  }
  if (to_compile.empty())
    throw invalid_input(fmt::format("no config of the search space can run {}:\n{}", describe(s),
                                    pruning_summary(out)));
  std::vector<std::string> sources(out.size());
  for (size_t i : to_compile) sources[i] = family.instantiation(out[i].rec.config, s);
  compile_variants(out, to_compile, sources, {device.arch, family.compile_options, family.backend}, cache, jobs, progress,
                   compiled_one);
  return out;
}

std::string pruning_summary(const std::vector<variant>& variants) {
  std::map<std::string, std::pair<int, const record*>> reasons;  // kind -> (count, first example)
  int pruned = 0;
  for (const auto& v : variants) {
    if (v.rec.status != status::pruned) continue;
    ++pruned;
    // Group by the reason's kind, not its numbers; the first of each kind shows its numbers.
    const std::string kind = std::regex_replace(v.rec.message, std::regex(R"(\d+)"), "N");
    auto& [count, example] = reasons[kind];
    if (count++ == 0) example = &v.rec;
  }
  std::string text = fmt::format("{} configs: {} to compile, {} pruned", variants.size(),
                                 variants.size() - pruned, pruned);
  for (const auto& [kind, seen] : reasons) {
    text += fmt::format("\n  pruned {:3} x {}", seen.first, kind);
    if (kind != seen.second->message) text += fmt::format("; e.g. {}: {}", config_name(*seen.second), seen.second->message);
  }
  return text;
}

}  // namespace attn
