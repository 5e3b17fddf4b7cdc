// The AMD family: kernels/mfma.cuh on the CDNA matrix cores, compiled with hiprtc.
#include <fmt/format.h>

#include "codegen/family.hpp"
#include "codegen/family_parts.hpp"

namespace attn {

namespace {

// Mirrors mfma_config in kernels/mfma.cuh: the same tiles as fa2, in LDS.
int64_t mfma_lds(const tile_config& c, const problem& s) { return padded_tiles_bytes(c, s); }

int mfma_threads(const tile_config& c) { return c.warps * 64; }  // warps count wavefronts of 64

std::optional<std::string> mfma_reject(const tile_config& c, const problem& s, const resource_limits& limits) {
  if (auto why = tiling_reason(c, "wavefronts", "MFMA")) return why;
  if (c.stages < 1 || c.stages > 4) return fmt::format("stages {} not in [1, 4]", c.stages);
  if (c.knob < 0 || c.knob > 8) return fmt::format("waves_per_eu {} not in [0, 8]", c.knob);
  if (mfma_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per workgroup", mfma_threads(c),
                       limits.max_threads_per_block);
  // Per lane of a wave64: O (rows x D) and S (rows x BLOCK_N) in fp32, out of 512 VGPR+AGPR.
  const int rows = c.block_m / c.warps;
  if (const int regs = rows * static_cast<int>(s.head_dim + c.block_n) / 64; regs > 256)
    return fmt::format("accumulators exceed the register budget: {} float registers per lane > 256", regs);
  if (const int64_t bytes = mfma_lds(c, s); bytes > limits.shared_memory_per_block)
    return fmt::format("LDS {} KiB exceeds the device's {} KiB per workgroup", (bytes + 1023) / 1024,
                       limits.shared_memory_per_block / 1024);
  return std::nullopt;
}

std::string mfma_instantiation(const tile_config& c, const problem& s) {
  // The knob: at least this many wavefronts per EU (SIMD), which caps VGPRs at 512 / knob.
  return instantiation_stub("mfma.cuh", "attn_mfma", "mfma_forward", "mfma_config", mfma_threads(c), c, s, 0,
                            c.knob > 0 ? fmt::format("__attribute__((amdgpu_waves_per_eu({})))", c.knob) : "");
}

}  // namespace

/// block_m {32,64,128} x block_n {32,64} x wavefronts {2,4} x LDS stages {1,2} x waves_per_eu {0,2}:
/// 48 configs (32-row blocks keep D=256 within 64 KiB of LDS). waves_per_eu, AMD's own axis: 0
/// leaves occupancy to the compiler, 2 asks for two wavefronts per SIMD (at most 256 VGPRs each),
/// trading registers for latency hiding.
search_space mfma_default_space() {
  search_space space{{32, 64, 128}, {32, 64}, {2, 4}, {1, 2}, {0, 2}};
  space.knob_name = "waves_per_eu";
  return space;
}

const kernel_family& mfma_family() {
  static const kernel_family family{
      "mfma",          backend::hip,        "attn_mfma",
      0,               mfma_default_space(), mfma_lds,
      mfma_threads,    mfma_reject,          mfma_instantiation,
      {},
      family_sources({"mfma.cuh", "reference.cuh"})};
  return family;
}

}  // namespace attn
