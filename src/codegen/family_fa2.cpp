#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"

namespace attn {

namespace {

// Mirrors fa2_config in kernels/fa2.cuh.
int64_t fa2_shared_memory(const tile_config& c, const problem& s) { return padded_tiles_bytes(c, s); }

int fa2_threads(const tile_config& c) { return c.warps * 32; }

// fp32 registers per thread for O (rows x D) and S (rows x BLOCK_N) of a warp's rows. Past this
// the kernel spills in its inner loop (seen: 192 -> 255 registers + spills at D=128, 128x64x4).
constexpr int max_accumulator_registers = 224;
int fa2_accumulator_registers(const tile_config& c, const problem& s) {
  const int warp_rows = c.block_m / c.warps;
  return warp_rows * static_cast<int>(s.head_dim + c.block_n) / 32;
}

std::optional<std::string> fa2_reject(const tile_config& c, const problem& s,
                                      const resource_limits& limits) {
  if (auto why = tiling_reason(c, "warps", "mma")) return why;
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

std::string fa2_instantiation(const tile_config& c, const problem& s) {
  return instantiation_stub("fa2.cuh", "attn_fa2", "fa2_forward", "fa2_config", fa2_threads(c), c, s);
}

}  // namespace

const kernel_family& fa2_family() {
  static const kernel_family family{
      "fa2",           backend::cuda,     "attn_fa2",
      8,               default_space(),   fa2_shared_memory,
      fa2_threads,     fa2_reject,        fa2_instantiation,
      {"--use_fast_math"},
      family_sources({"fa2.cuh", "reference.cuh"})};
  return family;
}

}  // namespace attn
