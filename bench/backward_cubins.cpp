// attn-backward-cubins: compiles the backward pass's variants (kernels/fa2_bwd.cuh) for one problem and
// writes each one's cubin, printing a JSON line per variant with its launches, so that
// bench/backward_peers.py can run ours beside PyTorch's backward in one process (the driver API
// through ctypes) until the tool tunes the backward itself (issue 22).
//
//   attn-backward-cubins --shape B,H[/KV],NQ[,NKV],D [--causal] [--dtype bf16|fp16] [--arch sm_90a]
//                        [--config NAME ...] --out DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"

namespace {

// "B,H[/KV],NQ[,NKV],D": the forward's --shape with the K/V heads after a slash and an optional NKV.
attn::problem parse_bench_shape(const std::string& text) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    parts.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (parts.size() != 4 && parts.size() != 5)
    throw attn::invalid_input(fmt::format("--shape '{}' is not B,H[/KV],NQ[,NKV],D", text));
  attn::problem s;
  try {
    s.batch = std::stoll(parts[0]);
    const size_t slash = parts[1].find('/');
    s.heads = std::stoll(parts[1].substr(0, slash));
    s.kv_heads = slash == std::string::npos ? s.heads : std::stoll(parts[1].substr(slash + 1));
    s.q_len = std::stoll(parts[2]);
    s.kv_len = parts.size() == 5 ? std::stoll(parts[3]) : s.q_len;
    s.head_dim = std::stoll(parts.back());
  } catch (const std::exception&) {
    throw attn::invalid_input(fmt::format("--shape '{}' is not B,H[/KV],NQ[,NKV],D", text));
  }
  return s;
}

int run(int argc, char** argv) {
  std::string shape, out, arch = "sm_90a", dtype = "bf16";
  bool causal = false;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw attn::invalid_input(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    if (a == "--shape") shape = value();
    else if (a == "--out") out = value();
    else if (a == "--arch") arch = value();
    else if (a == "--dtype") dtype = value();
    else if (a == "--causal") causal = true;
    else if (a == "--config") names.push_back(value());
    else throw attn::invalid_input(fmt::format("unknown argument '{}' (usage: --shape B,H[/KV],NQ[,NKV],D "
                                               "[--causal] [--dtype bf16|fp16] [--arch sm_90a] [--config NAME] --out DIR)", a));
  }
  if (shape.empty() || out.empty()) throw attn::invalid_input("--shape and --out are required");
  attn::problem s = parse_bench_shape(shape);
  s.causal = causal;
  s.dtype = attn::parse_dtype(dtype);
  attn::validate(s);
  std::vector<attn::backward_config> configs;
  for (const auto& n : names) configs.push_back(attn::parse_backward_config(n));
  if (configs.empty()) configs = attn::backward_default_configs(s);
  std::filesystem::create_directories(out);
  const attn::compile_cache cache(attn::default_cache_dir());
  const attn::resource_limits limits = attn::limits_for_arch(arch);
  for (const auto& c : configs) {
    if (const auto why = attn::backward_reject(c, s, limits)) {
      std::fprintf(stderr, "%s: pruned: %s\n", attn::name(c).c_str(), why->c_str());
      continue;
    }
    const auto r = attn::compile_with_cache(cache, attn::backward_instantiation(c, s), arch, attn::backward_compile_options());
    if (!r.result.ok) {
      std::fprintf(stderr, "%s: compile error:\n%s\n", attn::name(c).c_str(), r.result.log.c_str());
      continue;
    }
    const std::string path = out + "/" + attn::name(c) + ".cubin";
    std::ofstream(path, std::ios::binary) << r.result.cubin;
    std::string launches;
    for (const auto& l : attn::backward_launches(c, s))
      launches += fmt::format("{}{{\"symbol\": \"{}\", \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}], \"shared\": {}}}",
                              launches.empty() ? "" : ", ", l.symbol, l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y,
                              l.block.z, l.shared_bytes);
    std::printf("{\"config\": \"%s\", \"cubin\": \"%s\", \"registers\": %d, \"spill_bytes\": %d, \"launches\": [%s]}\n",
                attn::name(c).c_str(), path.c_str(), r.result.registers, r.result.spill_bytes, launches.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const attn::invalid_input& e) {
    std::fprintf(stderr, "attn-backward-cubins: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn-backward-cubins: %s\n", e.what());
    return 1;
  }
}
