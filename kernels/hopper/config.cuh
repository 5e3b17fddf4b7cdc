#pragma once
// The hopper family's compile-time configuration: warpgroup roles, the register hand-over, the
// schedule switches and the shared-memory layout (tiles, then mbarriers). The numbers the host's
// resource model (src/codegen/family_hopper.cpp) needs too are defined in common/resources.cuh.
#include "common/attention.cuh"
#include "common/resources.cuh"
#include "common/swizzle.cuh"

namespace attn_k {

/// SCHEDULE: the OR of common/resources.cuh's hopper_schedule_bit (schedule_persistent is the
/// host's launch only; the others select the kernel's code below).
/// O_SMEM: O has its own tile (else it is staged in Q's, and the next Q there waits for it).
/// WINDOW: a sliding window (p.window_left/right): a tile's K/V loop runs over the tiles its rows'
/// windows reach, those cut by an edge masked. SOFTCAP: each score s becomes
/// softcap_out tanh(s softcap_in) before the mask and the softmax. VARLEN: a packed
/// variable-length batch (flash_attn_varlen_func): a tile's batch index is its sequence, whose
/// rows and lengths come from p.cu_seqlens_q/k (hopper/scheduler.cuh's tile_sequence); tiles past
/// a sequence's rows are skipped, and one whose rows cross its end stores O by row. DV: V's and O's
/// head dim when it is not D (d 192, dv 128): V's tiles, P V, O's registers, tile and store are
/// DV wide (V's and O's tensor maps are the host's, over p.v_* and p.o_*); 0 is D. Head dims of 8s
/// (D_ or DV_ 40, 72, ...) are computed over tiles padded to 16, which TMA fills with zeros past
/// the head dim (the host's maps span the head dim only) and whose stores it clips. A dense
/// instantiation names none of them, so its source and binary are those measured before they existed.
///
/// Decode (issue 18): PACK, packed GQA: a tile's rows are the query rows of the heads that share a
/// K/V head (row m is query row m / S of head kv_head * group + m % S, S = pack_slots(p): the group
/// padded to a power of two), so each K/V tile is read once per K/V head; Q and O are copied
/// through 5-d tensor maps {column, head in the group, row, K/V head, batch} whose boxes hold the
/// rows in that order, S slots a row: the slots past the group (a group of 7 in 8) are out of the
/// tensor, read as zeros, never stored, and their LSE not written.
/// SPLIT, split-KV: p.num_splits tiles share a row block's K/V tiles (split_share), each writing
/// its normalized O (fp32) and LSE to the workspace from its registers; the combine kernel
/// (common/combine.cuh) merges them after. LENS: each sequence's K/V length is p.seqlens_k[batch]
/// (FlashAttention's cache_seqlens; its mask's, bottom-right per sequence). PAGED: K and V are
/// [pages, page_size, kv_heads, D] behind the page table p.block_table; a K/V tile is copied in
/// boxes of min(page_size, BLOCK_N) rows, one per page it touches (the host's maps span a page).
/// With either, the rows of a sequence's last tile past its length are real memory, not TMA's
/// zero fill: their scores are masked, and their V rows are zeroed in shared memory before P V
/// (0 x NaN would be NaN).
template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_, int SCHEDULE_,
          bool O_SMEM_, bool WINDOW_ = false, bool SOFTCAP_ = false, bool VARLEN_ = false, int DV_ = 0,
          bool PACK_ = false, bool SPLIT_ = false, bool LENS_ = false, bool PAGED_ = false>
struct hopper_config {
  static constexpr bool BF16 = BF16_, CAUSAL = CAUSAL_, O_SMEM = O_SMEM_;
  static constexpr bool WINDOW = WINDOW_, SOFTCAP = SOFTCAP_;
  /// D: the tiles' width, the head dim D_ padded to 16 (a head dim of 8s, 72, is read through TMA
  /// as an 80-wide tile whose columns past 72 are zeros; its stores write only D_'s columns).
  static constexpr int D = mma_head_dim(D_), BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, WARPS = WARPS_, STAGES = STAGES_;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int CONSUMERS = BLOCK_M / 64;  ///< warpgroups that compute, 64 rows each
  static constexpr bool OVERLAP = (SCHEDULE_ & schedule_overlap) != 0;
  static constexpr bool PINGPONG = (SCHEDULE_ & schedule_pingpong) != 0 && CONSUMERS >= 2;
  static constexpr int Q_BUFS = (SCHEDULE_ & schedule_two_q) != 0 ? 2 : 1;
  static constexpr bool HALF_LAST = (SCHEDULE_ & schedule_half_last) != 0 && BLOCK_N % 32 == 0;
  static constexpr bool SOFTCAP_POLY = SOFTCAP && (SCHEDULE_ & schedule_softcap_poly) != 0;
  static constexpr bool TRIM = (SCHEDULE_ & schedule_trim) != 0;
  static constexpr bool HALF_FIRST = (SCHEDULE_ & schedule_half_first) != 0 && WINDOW && OVERLAP && BLOCK_N % 32 == 0;
  static_assert(BLOCK_M % 64 == 0 && WARPS == 4 * CONSUMERS + 4, "64 rows per consumer warpgroup + a producer");
  static_assert(D_ % 8 == 0 && D_ >= 32 && D_ <= 256, "head dim: a multiple of 8 in [32, 256]");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "BLOCK_N: a multiple of 16 up to 256");
  static_assert(STAGES >= 2 && STAGES <= 8, "STAGES in [2, 8]");

  /// Registers per thread after setmaxnreg (common/resources.cuh): the producer (one TMA-issuing
  /// thread) keeps 24 or 32, the consumers share the rest of what the block was given at launch.
  /// PAGED (one computing warpgroup: the host refuses more) keeps 96: a tile's page lookups spilled
  /// at 32 (888 bytes at block_n 128) and 56 (168); the computing warpgroup's share is 256 either way.
  static constexpr int PRODUCER_REGS = PAGED_ && CONSUMERS == 1 ? 96 : hopper_producer_registers(CONSUMERS);
  /// Blocks an SM the launch bounds ask for (schedule_two_blocks: 2, one computing warpgroup).
  static constexpr int BLOCKS_PER_SM = schedule_blocks_per_sm(SCHEDULE_);
  static_assert(BLOCKS_PER_SM == 1 || CONSUMERS == 1, "two blocks an SM: one computing warpgroup");
  static constexpr int CONSUMER_REGS = consumer_registers(THREADS, CONSUMERS, PRODUCER_REGS, BLOCKS_PER_SM);

  /// TMA boxes are one swizzle span wide: D is copied as PIECES boxes of SPAN elements.
  static constexpr int SPAN = swizzle<D>::W / 2, PIECES = D / SPAN;
  /// V's and O's head dim (D unless DV_ names another).
  /// O_COLS: V's and O's head dim (D_ unless DV_ names another); DV: their tiles' width, padded to 16.
  static constexpr int O_COLS = DV_ ? DV_ : D_, DV = mma_head_dim(O_COLS);
  static_assert(O_COLS % 8 == 0 && O_COLS >= 32 && O_COLS <= 256, "V's head dim: a multiple of 8 in [32, 256]");
  /// Tiles, then mbarriers, + room to align the tiles (common/resources.cuh, the host's too).
  static constexpr hopper_layout LAYOUT{BLOCK_M, BLOCK_N, STAGES, D, 2, Q_BUFS, O_SMEM, DV_ ? DV : 0};
  static constexpr int Q_BYTES = LAYOUT.q_bytes(), KV_BYTES = LAYOUT.kv_bytes(), V_BYTES = LAYOUT.v_bytes();
  static constexpr int O_OFFSET = LAYOUT.o_offset();  ///< when O_SMEM
  static constexpr int Q_SLOT = LAYOUT.q_slot(), K_SLOT = LAYOUT.k_slot(), STAGE_BYTES = LAYOUT.stage_bytes();
  static constexpr int KV_OFFSET = LAYOUT.kv_offset(), TILE_BYTES = LAYOUT.tile_bytes();
  // O staged in Q's tile: a warpgroup's O rows lie on its own Q rows only at one swizzle width.
  static_assert(O_SMEM || swizzle<D>::W == swizzle<DV>::W, "O staged in Q's tile needs Q's swizzle width");
  static constexpr int SHARED_BYTES = LAYOUT.shared_bytes();
  static constexpr bool VARLEN = VARLEN_;  // last: a dense kernel's constants keep their places
  static constexpr bool PACK = PACK_, SPLIT = SPLIT_, LENS = LENS_, PAGED = PAGED_;
  static_assert(!VARLEN || !(PACK || SPLIT || LENS || PAGED), "a packed batch: no packed GQA, split-KV, kv_lens or pages");
  /// Each tile reads its own lengths (a packed batch's sequence, or LENS's).
  static constexpr bool SEQ_LENGTHS = VARLEN || LENS;
};

/// The lengths a tile's mask reads: the problem's (fwd_params), or VARLEN its sequence's.
template <bool VARLEN>
struct hopper_lengths {
  using type = fwd_params;
};
template <>
struct hopper_lengths<true> {
  using type = seq_lengths;
};

/// The mask the producer and the consumers agree on: which K/V tiles a tile's rows attend to.
/// It keeps a pointer to `lengths`, which must outlive it.
/// PACK: over packed rows (common/attention.cuh's packed_mask).
template <class C>
using hopper_query_mask = attention_mask<C::CAUSAL, typename hopper_lengths<C::SEQ_LENGTHS>::type, C::WINDOW>;
template <bool PACK, class Query>
struct hopper_mask_type {
  using type = Query;
};
template <class Query>
struct hopper_mask_type<true, Query> {
  using type = packed_mask<Query>;
};
template <class C>
using hopper_mask = typename hopper_mask_type<C::PACK, hopper_query_mask<C>>::type;
template <class C>
__device__ __forceinline__ hopper_query_mask<C> hopper_query_mask_of(
    const fwd_params& p, const typename hopper_lengths<C::SEQ_LENGTHS>::type& lengths) {
  if constexpr (C::WINDOW) return hopper_query_mask<C>::of(lengths, p.window_left, p.window_right);
  else return hopper_query_mask<C>::of(lengths);
}
/// PACK: a query row's head slots in the packed row space, the group padded to a power of two
/// (the host's pack_slots): packed row m is query row m / slots, head slot m % slots.
__device__ __forceinline__ int pack_slots(const fwd_params& p) { return 1 << (32 - __clz(p.group - 1)); }
template <class C>
__device__ __forceinline__ hopper_mask<C> hopper_mask_of(const fwd_params& p,
                                                         const typename hopper_lengths<C::SEQ_LENGTHS>::type& lengths) {
  if constexpr (C::PACK) return {hopper_query_mask_of<C>(p, lengths), pack_slots(p)};
  else return hopper_query_mask_of<C>(p, lengths);
}

/// Shared-memory addresses of one block's tiles and barriers. Full barriers complete on the
/// producer's one arrival plus the copy's bytes; empty ones on one arrival per consumer warpgroup.
template <class C>
struct hopper_smem {
  unsigned base;  ///< 1024-byte aligned
  __device__ unsigned q(int b) const { return base + b * C::Q_SLOT; }
  __device__ unsigned o(int b) const { return C::O_SMEM ? base + C::O_OFFSET : q(b); }  ///< b: the tile's Q
  __device__ unsigned k(int stage) const { return base + C::KV_OFFSET + stage * C::STAGE_BYTES; }
  __device__ unsigned v(int stage) const { return base + C::KV_OFFSET + stage * C::STAGE_BYTES + C::K_SLOT; }
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
