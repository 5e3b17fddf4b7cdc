#pragma once
// The hopper family's compile-time configuration: warpgroup roles, the register hand-over, the
// schedule switches and the shared-memory layout (tiles, then mbarriers). The host's resource
// model (src/codegen/family_hopper.cpp) mirrors these numbers.
#include "common/swizzle.cuh"

namespace attn_k {

/// SCHEDULE bits: 1 = intra-warpgroup overlap (S of tile j+1 issued before P V of tile j, its
/// softmax under that product), 2 = ping-pong (the computing warpgroups take turns to issue their
/// products, so one's softmax runs under the other's), 8 = two Q tiles (the next tile's Q lands
/// while this tile runs), 16 = half-width last tile (a warpgroup whose rows see at most the first
/// half of a tile's last K/V tile runs its softmax and P V there over that half only). 4
/// (persistent grid) is the host's launch.
/// O_SMEM: O has its own tile (else it is staged in Q's, and the next Q there waits for it).
template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_, int SCHEDULE_,
          bool O_SMEM_>
struct hopper_config {
  static constexpr bool BF16 = BF16_, CAUSAL = CAUSAL_, O_SMEM = O_SMEM_;
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, WARPS = WARPS_, STAGES = STAGES_;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int CONSUMERS = BLOCK_M / 64;  ///< warpgroups that compute, 64 rows each
  static constexpr bool OVERLAP = (SCHEDULE_ & 1) != 0;
  static constexpr bool PINGPONG = (SCHEDULE_ & 2) != 0 && CONSUMERS >= 2;
  static constexpr int Q_BUFS = (SCHEDULE_ & 8) != 0 ? 2 : 1;
  static constexpr bool HALF_LAST = (SCHEDULE_ & 16) != 0 && BLOCK_N % 32 == 0;
  static_assert(BLOCK_M % 64 == 0 && WARPS == 4 * CONSUMERS + 4, "64 rows per consumer warpgroup + a producer");
  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dim: a multiple of 16 in [32, 256]");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "BLOCK_N: a multiple of 16 up to 256");
  static_assert(STAGES >= 2 && STAGES <= 8, "STAGES in [2, 8]");

  /// Registers per thread after setmaxnreg: the producer (one TMA-issuing thread) keeps 24 or 32,
  /// the consumers share the rest of what the block was given at launch (__launch_bounds__(THREADS,
  /// 1): the 64K file over the threads, multiples of 8, at most 256). setmaxnreg.inc only takes
  /// registers the block already holds: asking for more waits forever. 2 consumers: 24 / 240; 3:
  /// 32 / 160 (FlashAttention-3's split).
  static constexpr int LAUNCH_REGS = 65536 / THREADS / 8 * 8 > 256 ? 256 : 65536 / THREADS / 8 * 8;
  static constexpr int PRODUCER_REGS = CONSUMERS == 2 ? 24 : 32;
  static constexpr int CONSUMER_SHARE = (LAUNCH_REGS * THREADS - 128 * PRODUCER_REGS) / (CONSUMERS * 128) / 8 * 8;
  static constexpr int CONSUMER_REGS = CONSUMER_SHARE > 256 ? 256 : CONSUMER_SHARE;

  /// TMA boxes are one swizzle span wide: D is copied as PIECES boxes of SPAN elements.
  static constexpr int SPAN = swizzle<D>::W / 2, PIECES = D / SPAN;
  static constexpr int Q_BYTES = BLOCK_M * D * 2, KV_BYTES = BLOCK_N * D * 2;
  static constexpr int O_OFFSET = Q_BYTES * Q_BUFS;  ///< when O_SMEM
  static constexpr int KV_OFFSET = Q_BYTES * (Q_BUFS + (O_SMEM ? 1 : 0));
  static constexpr int TILE_BYTES = KV_OFFSET + 2 * STAGES * KV_BYTES;
  static constexpr int BARRIERS = 2 * Q_BUFS + 4 * STAGES;  ///< Q full/empty per Q tile, K and V full/empty per stage
  /// + room to align the tiles to the swizzle pattern (1024 bytes)
  static constexpr int SHARED_BYTES = TILE_BYTES + BARRIERS * 8 + 1024;
};

/// Shared-memory addresses of one block's tiles and barriers. Full barriers complete on the
/// producer's one arrival plus the copy's bytes; empty ones on one arrival per consumer warpgroup.
template <class C>
struct hopper_smem {
  unsigned base;  ///< 1024-byte aligned
  __device__ unsigned q(int b) const { return base + b * C::Q_BYTES; }
  __device__ unsigned o(int b) const { return C::O_SMEM ? base + C::O_OFFSET : q(b); }  ///< b: the tile's Q
  __device__ unsigned k(int stage) const { return base + C::KV_OFFSET + 2 * stage * C::KV_BYTES; }
  __device__ unsigned v(int stage) const { return base + C::KV_OFFSET + (2 * stage + 1) * C::KV_BYTES; }
  __device__ unsigned bar(int i) const { return base + C::TILE_BYTES + 8 * i; }
  __device__ unsigned q_full(int b) const { return bar(2 * b); }
  __device__ unsigned q_empty(int b) const { return bar(2 * b + 1); }
  __device__ unsigned k_full(int s) const { return bar(2 * C::Q_BUFS + s); }
  __device__ unsigned k_empty(int s) const { return bar(2 * C::Q_BUFS + C::STAGES + s); }
  __device__ unsigned v_full(int s) const { return bar(2 * C::Q_BUFS + 2 * C::STAGES + s); }
  __device__ unsigned v_empty(int s) const { return bar(2 * C::Q_BUFS + 3 * C::STAGES + s); }
};

/// A position in a K/V ring: its slot and the parity of that slot's current round.
struct ring_pos {
  int stage;
  unsigned phase;
};
template <int STAGES>
__device__ __forceinline__ ring_pos ring_at(int iteration) {
  return {iteration % STAGES, static_cast<unsigned>(iteration / STAGES) & 1u};
}

}  // namespace attn_k
