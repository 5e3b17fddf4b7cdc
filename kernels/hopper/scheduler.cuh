#pragma once
// The tile scheduler: which (query block, head, batch) a block works on. Tiles are numbered so
// that blocks running at the same time share K and V in L2: the (batch, head) pairs are cut into
// sections of heads_per_section (chosen on the host so their K and V fit in L2 together); within
// a section the query blocks are outermost, longest first when causal (the diagonal's tiles are
// the short ones) or packed (a packed batch's last query blocks belong to its longest sequences,
// whose tiles have the most keys), heads innermost. Block b takes tiles b, b + gridDim.x, ...: a
// persistent grid of one block per SM walks them all; a grid of one block per tile is the
// classic launch.
#include "common/hopper_params.cuh"
#include "hopper/config.cuh"

namespace attn_k {

struct tile_coord {
  int m_block, head, batch;
};

/// PACK: a tile's head is a K/V head (its rows those of the heads that share it).
template <bool DESCENDING, bool PACK = false>
__device__ __forceinline__ tile_coord tile_at(const hopper_params& hp, int t) {
  const int per_section = hp.m_blocks * hp.heads_per_section;
  const int section = t / per_section, within = t - section * per_section;
  const int bh0 = section * hp.heads_per_section;
  const int heads = min(hp.heads_per_section, hp.batch_heads - bh0);  // the last section may be short
  const int m = within / heads, bh = bh0 + within % heads;
  const int tile_heads = PACK ? hp.p.heads / hp.p.group : hp.p.heads;
  return {DESCENDING ? hp.m_blocks - 1 - m : m, bh % tile_heads, bh / tile_heads};
}

/// A tile's sequence: where its rows start in the packed Q/O and K/V, and its query count. VARLEN:
/// from p.cu_seqlens_q/k, its lengths the mask's. Dense: rows 0 of the tile's batch entry and the
/// problem's lengths, read from the parameters where they are used.
template <bool VARLEN, bool LENS = false>
struct tile_sequence {
  __device__ __forceinline__ static tile_sequence at(const fwd_params&, int) { return {}; }
  __device__ __forceinline__ int q_row0() const { return 0; }
  __device__ __forceinline__ int k_row0() const { return 0; }
  __device__ __forceinline__ int q_len(const fwd_params& p) const { return p.q_len; }
};
/// LENS: rows 0 of the batch entry, the problem's q_len and the sequence's own K/V length.
template <>
struct tile_sequence<false, true> {
  seq_lengths len;
  __device__ __forceinline__ static tile_sequence at(const fwd_params& p, int batch) {
    return {{p.q_len, p.seqlens_k[batch]}};
  }
  __device__ __forceinline__ int q_row0() const { return 0; }
  __device__ __forceinline__ int k_row0() const { return 0; }
  __device__ __forceinline__ int q_len(const fwd_params& p) const { return p.q_len; }
};
template <>
struct tile_sequence<true> {
  int q0, k0;
  seq_lengths len;
  __device__ __forceinline__ static tile_sequence at(const fwd_params& p, int batch) {
    const int q = p.cu_seqlens_q[batch], k = p.cu_seqlens_k[batch];
    return {q, k, {p.cu_seqlens_q[batch + 1] - q, p.cu_seqlens_k[batch + 1] - k}};
  }
  __device__ __forceinline__ int q_row0() const { return q0; }
  __device__ __forceinline__ int k_row0() const { return k0; }
  __device__ __forceinline__ int q_len(const fwd_params&) const { return len.q_len; }
};

/// Tile t as a block works on it: where it is and its sequence. The producer and the consumers
/// skip the same ones: VARLEN tiles past their sequence's rows.
/// SPLIT: tiles t of one row block are its p.num_splits splits, t % num_splits the split.
template <class C>
struct work_tile {
  tile_coord tc;
  tile_sequence<C::VARLEN, C::LENS> seq;
  int split = 0;
  __device__ __forceinline__ int m0() const { return tc.m_block * C::BLOCK_M; }
  __device__ __forceinline__ bool past_end(const fwd_params& p) const { return m0() >= seq.q_len(p); }
};
template <class C>
__device__ __forceinline__ work_tile<C> work_at(const hopper_params& hp, int t) {
  if constexpr (C::SPLIT) {
    const tile_coord tc = tile_at<C::CAUSAL, C::PACK>(hp, t / hp.p.num_splits);
    return {tc, tile_sequence<C::VARLEN, C::LENS>::at(hp.p, tc.batch), t % hp.p.num_splits};
  }
  const tile_coord tc = tile_at<C::CAUSAL || C::VARLEN, C::PACK>(hp, t);
  return {tc, tile_sequence<C::VARLEN, C::LENS>::at(hp.p, tc.batch)};
}

/// The query rows of a tile's row space: PACK, a K/V head's packed rows (q_len x pack_slots).
template <class C>
__device__ __forceinline__ int tile_rows(const fwd_params& p) {
  return C::PACK ? p.q_len * pack_slots(p) : p.q_len;
}

/// The K/V tiles a tile's rows attend to: the mask's range, SPLIT the tile's split's share of it.
/// The producer and the consumers agree on it.
template <class C>
__device__ __forceinline__ kv_tile_range tile_range(const hopper_mask<C>& mask, const work_tile<C>& w,
                                                    const fwd_params& p) {
  const kv_tile_range r = mask.template range<C::BLOCK_M, C::BLOCK_N>(w.m0());
  if constexpr (C::SPLIT) return split_share(r, w.split, p.num_splits);
  else return r;
}

/// A block's masks (hopper_mask): the problem's, made once, or VARLEN each tile's sequence's
/// (it points into the work_tile, which must outlive it).
template <class C, bool VARLEN = C::SEQ_LENGTHS>
struct block_masks {
  hopper_mask<C> whole;
  __device__ __forceinline__ explicit block_masks(const fwd_params& p) : whole(hopper_mask_of<C>(p, p)) {}
  __device__ __forceinline__ hopper_mask<C> at(const fwd_params&, const work_tile<C>&) const { return whole; }
};
template <class C>
struct block_masks<C, true> {
  __device__ __forceinline__ explicit block_masks(const fwd_params&) {}
  __device__ __forceinline__ hopper_mask<C> at(const fwd_params& p, const work_tile<C>& w) const {
    return hopper_mask_of<C>(p, w.seq.len);
  }
};

}  // namespace attn_k
