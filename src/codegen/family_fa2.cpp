#include <fmt/format.h>

#include "codegen/family.hpp"

namespace attn {

namespace {

// Mirrors fa2_config in kernels/fa2.cuh: Q tile plus STAGES K and V tiles, rows padded by 8.
int64_t fa2_shared_memory(const tile_config& c, const shape& s) {
  const int64_t pitch = s.head_dim + 8;
  return (c.block_m + 2LL * c.stages * c.block_n) * pitch * element_size(s.dtype);
}

int fa2_threads(const tile_config& c) { return c.warps * 32; }

// fp32 registers per thread for O (rows x D) and S (rows x BLOCK_N) of a warp's rows. Past this
// the kernel spills in its inner loop (seen: 192 -> 255 registers + spills at D=128, 128x64x4).
constexpr int max_accumulator_registers = 224;
int fa2_accumulator_registers(const tile_config& c, const shape& s) {
  const int warp_rows = c.block_m / c.warps;
  return warp_rows * static_cast<int>(s.head_dim + c.block_n) / 32;
}

std::optional<std::string> fa2_reject(const tile_config& c, const shape& s,
                                      const resource_limits& limits) {
  if (c.block_m % c.warps != 0 || (c.block_m / c.warps) % 16 != 0)
    return fmt::format("block_m {} over {} warps is not a whole number of 16-row mma tiles",
                       c.block_m, c.warps);
  if (c.block_n % 16 != 0) return fmt::format("block_n {} is not a multiple of 16", c.block_n);
  if (const int regs = fa2_accumulator_registers(c, s); regs > max_accumulator_registers)
    return fmt::format("accumulators exceed the register budget: {} float registers per thread > {}",
                       regs, max_accumulator_registers);
  if (c.stages < 1 || c.stages > 8) return fmt::format("stages {} not in [1, 8]", c.stages);
  if (fa2_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per block", fa2_threads(c),
                       limits.max_threads_per_block);
  const int64_t bytes = fa2_shared_memory(c, s);
  if (bytes > limits.shared_memory_per_block)
    return fmt::format("shared memory {} KiB exceeds the device's {} KiB per block",
                       (bytes + 1023) / 1024, limits.shared_memory_per_block / 1024);
  if (limits.cc_major < 8) return std::string("mma.sync bf16/fp16 m16n8k16 needs sm_80 or newer");
  return std::nullopt;
}

std::string fa2_instantiation(const tile_config& c, const shape& s) {
  return fmt::format(
      "#include \"fa2.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__({threads}) attn_fa2(const attn_k::fwd_params p) {{\n"
      "  attn_k::fa2_forward<attn_k::fa2_config<{bf16}, {d}, {bm}, {bn}, {w}, {st}, {causal}>>(p);\n"
      "}}\n",
      fmt::arg("threads", fa2_threads(c)), fmt::arg("bf16", s.dtype == dtype::bf16),
      fmt::arg("d", s.head_dim), fmt::arg("bm", c.block_m), fmt::arg("bn", c.block_n),
      fmt::arg("w", c.warps), fmt::arg("st", c.stages), fmt::arg("causal", s.causal));
}

}  // namespace

const kernel_family& fa2_family() {
  static const kernel_family family{
      "fa2",           backend::cuda,     "attn_fa2",
      8,               default_space(),   fa2_shared_memory,
      fa2_threads,     fa2_reject,        fa2_instantiation,
      {"--use_fast_math"},
      {"common/device.cuh", "common/params.cuh", "fa2.cuh", "reference.cuh"}};
  return family;
}

std::string to_string(backend b) { return b == backend::cuda ? "cuda" : "hip"; }

const kernel_family& find_family(const std::string& name) {
  if (name == "fa2") return fa2_family();
  if (name == "mfma") return mfma_family();
  throw invalid_input(fmt::format("unknown kernel family '{}' (known: fa2, mfma)", name));
}

}  // namespace attn
