// The Hopper family: kernels/wgmma.cuh, fa2's algorithm on wgmma (sm_90a only).
#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"

namespace attn {

namespace {

// Mirrors wgmma_config in kernels/wgmma.cuh: unpadded tiles (the core-matrix layout is
// conflict-free as it is).
int64_t wgmma_shared_memory(const tile_config& c, const shape& s) {
  return (c.block_m + 2LL * c.stages * c.block_n) * s.head_dim * element_size(s.dtype);
}

int wgmma_threads(const tile_config& c) { return c.warps * 32; }

// fp32 accumulator registers per thread: O (64 x D) and S (64 x BLOCK_N) over a warpgroup's 128
// threads. P takes another BLOCK_N / 4; past this budget ptxas spills.
constexpr int max_accumulator_registers = 192;

std::optional<std::string> wgmma_reject(const tile_config& c, const shape& s, const resource_limits& limits) {
  if (c.warps % 4 != 0 || c.block_m != 16 * c.warps)
    return fmt::format("block_m {} is not 64 rows per warpgroup of {} warps", c.block_m, c.warps);
  if (c.block_n % 16 != 0 || c.block_n > 256)
    return fmt::format("block_n {} is not a multiple of 16 up to 256", c.block_n);
  if (const int regs = static_cast<int>(s.head_dim + c.block_n) / 2; regs > max_accumulator_registers)
    return fmt::format("accumulators exceed the register budget: {} float registers per thread > {}", regs,
                       max_accumulator_registers);
  if (c.stages < 1 || c.stages > 8) return fmt::format("stages {} not in [1, 8]", c.stages);
  if (wgmma_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per block", wgmma_threads(c),
                       limits.max_threads_per_block);
  if (const int64_t bytes = wgmma_shared_memory(c, s); bytes > limits.shared_memory_per_block)
    return fmt::format("shared memory {} KiB exceeds the device's {} KiB per block", (bytes + 1023) / 1024,
                       limits.shared_memory_per_block / 1024);
  if (limits.cc_major != 9 || limits.cc_minor != 0)
    return std::string("wgmma needs sm_90a (Hopper)");
  return std::nullopt;
}

std::string wgmma_instantiation(const tile_config& c, const shape& s) {
  return instantiation_stub("wgmma.cuh", "attn_wgmma", "wgmma_forward", "wgmma_config", wgmma_threads(c), c, s);
}

}  // namespace

/// block_m {64,128,192} x block_n {64,128,192} x warps {4,8,12} x stages {1,2,3,4}; only
/// block_m = 16 x warps (one warpgroup per 64 rows) is expressible: 36 configs before pruning.
search_space wgmma_default_space() { return {{64, 128, 192}, {64, 128, 192}, {4, 8, 12}, {1, 2, 3, 4}}; }

const kernel_family& wgmma_family() {
  static const kernel_family family{
      "wgmma",         backend::cuda,         "attn_wgmma",
      9,               wgmma_default_space(), wgmma_shared_memory,
      wgmma_threads,   wgmma_reject,          wgmma_instantiation,
      {"--use_fast_math"},
      {"common/device.cuh", "common/params.cuh", "common/wgmma_ops.cuh", "wgmma.cuh", "reference.cuh"}};
  return family;
}

}  // namespace attn
