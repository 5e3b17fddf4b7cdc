#pragma once
// The numbers the host's resource model (src/codegen/family_*.cpp) and the kernels share, defined
// once: the hopper family's schedule bits, the registers setmaxnreg hands over between a producer
// warpgroup and the computing ones, and each family's shared-memory layout. Plain C++ (constexpr
// only, no storage in the module): g++, NVRTC and hiprtc all accept it.
#ifndef ATTN_HOST_DEVICE
#if defined(__CUDACC__) || defined(__HIPCC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif
#endif

namespace attn_k {

/// Split-KV (the fa2 family): the most splits a config may have (config.cpp's largest_splits); up to
/// FUSED_MERGE_SPLITS splits the last split of a row block to finish merges them in the kernel
/// (measured on the H200 against the combine kernel, kernels/NOTES.md D3: 2-11% faster at 2 and 4
/// splits, 3-4% slower at 8 and 32), above it the combine kernel (COMBINE_THREADS a block, one block
/// per output row) runs after. The counters at the start of the workspace: one per row block (its
/// splits count themselves there; the last sets it back to 0), so a fused launch has at most
/// SPLIT_COUNTERS row blocks. They come before the partial O and LSE, at a place no other use of the
/// workspace writes, and start at 0 (the host zeroes them when it makes one).
constexpr int MAX_SPLITS = 128;
constexpr int FUSED_MERGE_SPLITS = 4;
constexpr int COMBINE_THREADS = 128;
constexpr int SPLIT_COUNTERS = 1 << 14;

/// The hopper family's schedule (its search axis `schedule`; the config name's `_k<N>` is the OR of
/// these bits, e.g. m128_n128_w12_s2_k13 = overlap | persistent | two Q tiles):
enum hopper_schedule_bit : int {
  /// Intra-warpgroup overlap: S of tile j+1 is issued before P V of tile j, and its softmax runs
  /// under that product.
  schedule_overlap = 1,
  /// Ping-pong: the computing warpgroups take turns to issue their products (named barriers), so
  /// one's softmax runs under the other's products. Needs two computing warpgroups.
  schedule_pingpong = 2,
  /// Persistent grid: one block per SM (two with schedule_two_blocks) walks the tiles. The host's
  /// launch only (the grid); it does not reach the kernel source.
  schedule_persistent = 4,
  /// Two Q tiles: the next tile's Q lands while this tile runs.
  schedule_two_q = 8,
  /// Half-width last tile: a warpgroup whose rows see at most the first half of its last K/V tile
  /// runs its softmax and P V there over that half only. Needs BLOCK_N a multiple of 32.
  schedule_half_last = 16,
  /// Two blocks an SM: __launch_bounds__(threads, 2), each block's setmaxnreg hand-over within half
  /// the register file (a persistent grid is then two blocks an SM), so one block's start and tail
  /// run under the other's loads. One computing warpgroup only (decode's tiles).
  schedule_two_blocks = 32,
  /// Softcap's tanh as a polynomial on the FMA pipes (hopper/softmax.cuh's wg_softcap_poly), where
  /// a warp's scores of an unmasked tile are within the polynomial's range; tanh.approx (the SFU,
  /// beside exp2) elsewhere. Softcap problems only.
  schedule_softcap_poly = 64,
  /// Trimmed warpgroups: a computing warpgroup skips the K/V tiles of its block's range that none
  /// of its 64 rows see (the causal diagonal's last tile beside block_n 64, a window's first and
  /// last): it waits for their copies and hands the slots back (hopper.cuh's skip_tiles).
  schedule_trim = 128,
  /// Half-width first tile: a warpgroup whose rows see only the second half of its first K/V tile
  /// (a window's left edge) runs S, its softmax and P V there over that half only. Needs the
  /// overlap, a window and BLOCK_N a multiple of 32.
  schedule_half_first = 256,
};
/// Every bit: schedules are in [0, schedule_all].
enum : int { schedule_all = 511 };
/// The bits that change the kernel's source (the instantiation's SCHEDULE parameter).
enum : int {
  schedule_kernel_bits =
      schedule_overlap | schedule_pingpong | schedule_two_q | schedule_half_last | schedule_two_blocks |
      schedule_softcap_poly | schedule_trim | schedule_half_first
};

/// Blocks an SM a hopper schedule's launch bounds ask for: 2 with schedule_two_blocks, else 1.
ATTN_HOST_DEVICE constexpr int schedule_blocks_per_sm(int schedule) {
  return (schedule & schedule_two_blocks) != 0 ? 2 : 1;
}

/// Registers per thread a block of `threads` holds at launch under __launch_bounds__(threads,
/// blocks): the 64K register file over the blocks' threads, in multiples of 8, at most 256.
ATTN_HOST_DEVICE constexpr int launch_registers(int threads, int blocks = 1) {
  return 65536 / blocks / threads / 8 * 8 > 256 ? 256 : 65536 / blocks / threads / 8 * 8;
}
/// The register hand-over (setmaxnreg) of a block of `threads` with one producer warpgroup that
/// keeps producer_registers: each of the `consumers` computing warpgroups' threads gets the rest of
/// what the block holds from launch, in multiples of 8, at most 256. setmaxnreg.inc only takes
/// registers the block already holds: asking for more waits forever (measured with 4 consumers).
ATTN_HOST_DEVICE constexpr int consumer_registers(int threads, int consumers, int producer_registers, int blocks = 1) {
  const int share = (launch_registers(threads, blocks) * threads - 128 * producer_registers) /
                    (consumers > 0 ? consumers * 128 : 128) / 8 * 8;
  return share > 256 ? 256 : share;
}
/// What the producer warpgroup keeps: wgmma's loads with 128 threads (cp.async), hopper's with one
/// thread (TMA): 24 beside 2 consumers, 32 beside 3 (FlashAttention-3's split: 24 / 240, 32 / 160).
enum : int { wgmma_producer_registers = 40 };
ATTN_HOST_DEVICE constexpr int hopper_producer_registers(int consumers) { return consumers == 2 ? 24 : 32; }

/// fa2 (shared memory) and mfma (LDS): the Q tile and `stages` K and V tiles, rows of D elements
/// padded by 8 (so ldmatrix and cp.async are free of bank conflicts for every head dim).
/// The head dim the tensor-core loops run over: D rounded up to the 16 of an MMA's k step (fa2 takes
/// multiples of 8: the columns past D are zero in shared memory and never written out).
ATTN_HOST_DEVICE constexpr int mma_head_dim(int d) { return (d + 15) / 16 * 16; }

ATTN_HOST_DEVICE constexpr long long padded_tiles_bytes(int block_m, int block_n, int stages, int d, int elem_bytes) {
  return (block_m + 2LL * stages * block_n) * (d + 8) * elem_bytes;
}
/// fa2 with dv != d: Q and K rows of d (padded), V rows of dv; O (block_m rows of dv, padded) is
/// staged over the tiles after the loop, so the block needs the larger of the two.
ATTN_HOST_DEVICE constexpr long long padded_tiles_bytes(int block_m, int block_n, int stages, int d, int dv,
                                                        int elem_bytes) {
  const long long tiles = ((block_m + 1LL * stages * block_n) * (d + 8) + 1LL * stages * block_n * (dv + 8)) * elem_bytes;
  const long long o_stage = 1LL * block_m * (dv + 8) * elem_bytes;
  return tiles > o_stage ? tiles : o_stage;
}

/// wgmma: unpadded, swizzled Q and `stages` K and V tiles, 1024-byte aligned; then a full and an
/// empty mbarrier per K and V stage; and 1024 bytes of room to align the tiles.
struct wgmma_layout {
  int block_m, block_n, stages, d, elem_bytes;
  ATTN_HOST_DEVICE constexpr int q_bytes() const { return block_m * d * elem_bytes; }
  ATTN_HOST_DEVICE constexpr int kv_bytes() const { return block_n * d * elem_bytes; }
  ATTN_HOST_DEVICE constexpr int tile_bytes() const { return q_bytes() + 2 * stages * kv_bytes(); }
  ATTN_HOST_DEVICE constexpr int shared_bytes() const { return tile_bytes() + 4 * stages * 8 + 1024; }
};

/// hopper: q_tiles Q tiles, O's own tile when o_smem (else O is staged in its Q tile), `stages` K
/// and V tiles (K at 2 s, V at 2 s + 1), unpadded and swizzled; then the mbarriers (Q full/empty
/// per Q tile, K and V full/empty per stage); and 1024 bytes of room to align the tiles.
/// dv (V's and O's head dim when it is not d; 0: d): V's and O's tiles are dv wide, every tile's
/// slot rounded up to 1024 bytes (a 128-byte swizzle's period, whatever the other tiles' widths)
/// and a Q slot that stages O holds the larger of the two. With dv 0 the layout is the one before.
struct hopper_layout {
  int block_m, block_n, stages, d, elem_bytes, q_tiles;
  bool o_smem;
  int dv = 0;
  ATTN_HOST_DEVICE constexpr bool own_dv() const { return dv != 0 && dv != d; }
  ATTN_HOST_DEVICE constexpr int slot(int bytes) const { return own_dv() ? (bytes + 1023) / 1024 * 1024 : bytes; }
  ATTN_HOST_DEVICE constexpr int q_bytes() const { return block_m * d * elem_bytes; }
  ATTN_HOST_DEVICE constexpr int kv_bytes() const { return block_n * d * elem_bytes; }  ///< K's (and V's, dv = d)
  ATTN_HOST_DEVICE constexpr int v_bytes() const { return block_n * (own_dv() ? dv : d) * elem_bytes; }
  ATTN_HOST_DEVICE constexpr int o_bytes() const { return block_m * (own_dv() ? dv : d) * elem_bytes; }
  /// A Q tile's slot: Q's bytes, or O's when O is staged there and is the larger.
  ATTN_HOST_DEVICE constexpr int q_slot() const {
    return slot(!o_smem && o_bytes() > q_bytes() ? o_bytes() : q_bytes());
  }
  ATTN_HOST_DEVICE constexpr int k_slot() const { return slot(kv_bytes()); }
  ATTN_HOST_DEVICE constexpr int stage_bytes() const { return k_slot() + slot(v_bytes()); }
  ATTN_HOST_DEVICE constexpr int o_offset() const { return q_slot() * q_tiles; }  ///< when o_smem
  ATTN_HOST_DEVICE constexpr int kv_offset() const { return q_slot() * q_tiles + (o_smem ? slot(o_bytes()) : 0); }
  ATTN_HOST_DEVICE constexpr int tile_bytes() const { return kv_offset() + stages * stage_bytes(); }
  ATTN_HOST_DEVICE constexpr int barriers() const { return 2 * q_tiles + 4 * stages; }
  ATTN_HOST_DEVICE constexpr int shared_bytes() const { return tile_bytes() + barriers() * 8 + 1024; }
};

/// The backward pass's kernels. fa2_bwd.cuh's bwd_dkdv: K and V tiles, then per stage a Q and a dO
/// tile, then per stage the tile's LSE (log2 units) and delta (rows padded by 8 elements; K's and Q's
/// of d columns, V's and dO's of dv, d when 0).
ATTN_HOST_DEVICE constexpr long long bwd_dkdv_shared_bytes(int block_m, int block_n, int stages, int d, int elem_bytes,
                                                           int dv = 0) {
  const long long pitches = mma_head_dim(d) + 8 + mma_head_dim(dv > 0 ? dv : d) + 8;
  return (block_n + (long long)stages * block_m) * pitches * elem_bytes + 2LL * stages * block_m * 4;
}
/// bwd_dq's: a Q and a dO tile, then per stage a K and a V tile.
ATTN_HOST_DEVICE constexpr long long bwd_dq_shared_bytes(int block_m, int block_n, int stages, int d, int elem_bytes,
                                                         int dv = 0) {
  const long long pitches = mma_head_dim(d) + 8 + mma_head_dim(dv > 0 ? dv : d) + 8;
  return (block_m + (long long)stages * block_n) * pitches * elem_bytes;
}

/// wgmma_bwd.cuh's (swizzled tiles, with 1024 bytes to align them): the dK/dV kernel's K and V tiles, per stage a
/// Q and a dO tile and their LSE and delta; the dQ kernel's Q and dO tiles and per stage K and V. K's and Q's
/// tiles are d wide, V's and dO's dv (d when 0).
ATTN_HOST_DEVICE constexpr long long wg_bwd_dkdv_shared_bytes(int block_m, int block_n, int stages, int d,
                                                              bool atomic_dq = false, int dv = 0, bool ws = false) {
  return (1LL * block_n + 1LL * stages * block_m) * (d + (dv > 0 ? dv : d)) * 2 + 2LL * stages * block_m * 4 + 1024 +
         (atomic_dq ? 2LL * block_n * block_m : 0) +  // atomic dQ: the step's dS^T
         (ws ? 2LL * block_n * block_m + 16LL * stages : 0);  // warp-specialized: a second dS^T, the ring's barriers
}
ATTN_HOST_DEVICE constexpr long long wg_bwd_dq_shared_bytes(int block_m, int block_n, int stages, int d, int dv = 0) {
  return (1LL * block_m + 1LL * stages * block_n) * (d + (dv > 0 ? dv : d)) * 2 + 1024;
}

}  // namespace attn_k
