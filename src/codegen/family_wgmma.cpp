// The Hopper family: kernels/wgmma.cuh, fa2's algorithm on wgmma (sm_90a only).
#include <algorithm>

#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"
#include "common/resources.cuh"  // kernels/common, shared with the device code

namespace attn {

namespace {

// wgmma_config's layout (common/resources.cuh): unpadded tiles (the swizzled layout is
// conflict-free as it is), four mbarriers per stage and 1024 bytes to align the tiles.
int64_t wgmma_shared_memory(const tile_config& c, const problem& s) {
  return attn_k::wgmma_layout{c.block_m, c.block_n, c.stages, static_cast<int>(s.head_dim),
                              static_cast<int>(element_size(s.dtype))}
      .shared_bytes();
}

// One warpgroup per 64 rows, plus (warp specialization) one that only loads.
bool has_producer(const tile_config& c) { return c.warps == c.block_m / 16 + 4; }

int wgmma_threads(const tile_config& c) { return c.warps * 32; }

// Registers a computing thread may use: without a producer, the 64K register file over the
// block's threads; with one, what setmaxnreg hands the consumers out of what the block holds
// from launch, less the producer's 40 (wgmma_config::CONSUMER_REGS, common/resources.cuh).
int consumer_registers(const tile_config& c) {
  const int threads = wgmma_threads(c);
  if (has_producer(c))
    return attn_k::consumer_registers(threads, c.block_m / 64, attn_k::wgmma_producer_registers);
  return std::min(255, attn_k::launch_registers(threads));
}

// Registers a thread's tile state takes: O (64 x D) and S (64 x BLOCK_N) in fp32 over a
// warpgroup's 128 threads, P (BLOCK_N / 4, packed). Past the thread's budget less a few for
// addresses, ptxas spills (measured: m192_n128 with a producer, 96 bytes) or gives up.
int state_registers(const tile_config& c, const problem& s) {
  return static_cast<int>(s.head_dim) / 2 + 3 * c.block_n / 4;
}

std::optional<std::string> wgmma_reject(const tile_config& c, const problem& s, const resource_limits& limits) {
  if (limits.cc_major != 9 || limits.cc_minor != 0) return std::string("wgmma needs sm_90a (Hopper)");
  if (c.block_m % 64 != 0 || (c.warps != c.block_m / 16 && !has_producer(c)))
    return fmt::format("block_m {} over {} warps is neither 64 rows per warpgroup nor that plus a producer "
                       "warpgroup", c.block_m, c.warps);
  if (has_producer(c) && c.stages < 2)
    return fmt::format("a producer warpgroup keeps a tile in flight: stages {} < 2", c.stages);
  if (c.block_n % 16 != 0 || c.block_n > 256)
    return fmt::format("block_n {} is not a multiple of 16 up to 256", c.block_n);
  if (const int regs = state_registers(c, s); regs > consumer_registers(c) - 8)
    return fmt::format("O, S and P need {} registers per thread, over the {} a computing thread gets (less 8)",
                       regs, consumer_registers(c));
  if (c.stages < 1 || c.stages > 8) return fmt::format("stages {} not in [1, 8]", c.stages);
  if (wgmma_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per block", wgmma_threads(c),
                       limits.max_threads_per_block);
  if (const int64_t bytes = wgmma_shared_memory(c, s); bytes > limits.shared_memory_per_block)
    return fmt::format("shared memory {} KiB exceeds the device's {} KiB per block", (bytes + 1023) / 1024,
                       limits.shared_memory_per_block / 1024);
  return std::nullopt;
}

std::string wgmma_instantiation(const tile_config& c, const problem& s) {
  // setmaxnreg (the producer's register hand-over) needs a register cap at entry: one block per SM.
  return instantiation_stub("wgmma.cuh", "attn_wgmma", "wgmma_forward", "wgmma_config", wgmma_threads(c), c, s,
                            has_producer(c) ? 1 : 0);
}

}  // namespace

/// block_m {128,192} x block_n {64,80,128,176} x warps {8,12,16} x stages {2,3,4} (80 and 176:
/// FlashAttention-3's tiles for D=256 and D=128). Per block_m two warp counts are expressible:
/// block_m / 16 (every warp computes and loads) and 4 more (a producer warpgroup loads): 48
/// configs before the register and shared-memory limits. Measured on the H200, 64-row blocks
/// and single-stage rings were never close to the best, so the default leaves them out
/// (--space block_m=64 warps=4 stages=1 still reaches them).
search_space wgmma_default_space() { return {{128, 192}, {64, 80, 128, 176}, {8, 12, 16}, {2, 3, 4}}; }

const kernel_family& wgmma_family() {
  static const kernel_family family{
      "wgmma",         backend::cuda,         "attn_wgmma",
      9,               wgmma_default_space(), wgmma_shared_memory,
      wgmma_threads,   wgmma_reject,          wgmma_instantiation,
      {"--use_fast_math"},
      family_sources({"wgmma.cuh", "reference.cuh"}),
      true};  // arch-specific: sm_90a runs on cc 9.0 only
  return family;
}

}  // namespace attn
