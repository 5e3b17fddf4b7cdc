// attn-backward-cubins: compiles the backward pass's variants (kernels/fa2_bwd.cuh) for one problem and
// writes each one's cubin, printing a JSON line per variant with its launches, so that
// bench/backward_peers.py can run ours beside PyTorch's backward in one process (the driver API
// through ctypes) until the tool tunes the backward itself (issue 22).
//
//   attn-backward-cubins --shape B,H,N,D [--kv-heads H] [--kv-len N] [--causal] [--dtype bf16|fp16]
//                        [--arch sm_90a] [--config NAME ...] --out DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codegen/backward.hpp"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Compiles the backward pass's variants for one problem, writes each cubin to --out and prints a JSON "
               "line per variant with its launches (bench/backward_peers.py reads them)."};
  std::string shape, out, arch = "sm_90a", dtype = "bf16";
  int64_t kv_heads = 0, kv_len = 0;
  bool causal = false;
  std::vector<std::string> names;
  app.add_option("--shape", shape, "B,H,N,D (the tool's --shape)")->required();
  app.add_option("--kv-heads", kv_heads, "K/V heads (default: H)");
  app.add_option("--kv-len", kv_len, "K/V length (default: N)");
  app.add_flag("--causal", causal, "bottom-right aligned causal mask");
  app.add_option("--dtype", dtype, "bf16 or fp16")->capture_default_str();
  app.add_option("--arch", arch, "the architecture to compile for")->capture_default_str();
  app.add_option("--config", names, "variant names (default: every default variant the pruner keeps)");
  app.add_option("--out", out, "the folder the cubins go to")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  attn::problem s = attn::parse_shape(shape);
  if (kv_heads > 0) s.kv_heads = kv_heads;
  if (kv_len > 0) s.kv_len = kv_len;
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
