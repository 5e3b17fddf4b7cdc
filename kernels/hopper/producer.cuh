#pragma once
// The producer: one elected thread of the last warpgroup issues every copy of the block. For each
// of its tiles (the K/V tiles of its range: from 0, or a window's first): K_0, then Q (once every consumer is done with that Q tile's last use), then K_{j+1}
// before V_j, so the consumers' S of the next tile never waits behind the V they need now. Each
// copy completes on its slot's full barrier (one arrival with the byte count); a slot is reused
// once its empty barrier has an arrival from every consumer warpgroup.
#include "common/attention.cuh"
#include "common/hopper_ptx.cuh"
#include "hopper/config.cuh"
#include "hopper/scheduler.cuh"

namespace attn_k {

/// The boxes of one tile of WIDTH columns (D, or V's DV), one swizzle span each: `rows` rows from
/// `row0` of (head, batch), piece b at b * rows * W.
template <class C, int WIDTH = C::D>
__device__ __forceinline__ void tma_load_tile(unsigned dst, const tensor_map* map, unsigned bar, int rows, int row0,
                                              int head, int batch) {
  constexpr int W = swizzle<WIDTH>::W;
#pragma unroll
  for (int b = 0; b < WIDTH / (W / 2); ++b) tma_load_4d(dst + b * rows * W, map, bar, b * (W / 2), row0, head, batch);
}

/// PAGED: one K/V tile's boxes, min(page_size, BLOCK_N) rows each from the page the sequence's
/// table names (pages of 16 rows or more: at most BLOCK_N / 16 boxes). The table is read first
/// (`lookup`, before the producer waits for the slot, so the loads' latency hides under the wait),
/// then the boxes are issued; rows past the sequence's pages read its last page (masked, and V's
/// zeroed, by the consumers).
template <class C>
struct paged_tile {
  static constexpr int MAX_BOXES = C::BLOCK_N / 16;
  int page[MAX_BOXES];
  __device__ __forceinline__ void lookup(const fwd_params& p, const int* table, int n0) {
    const int rows = min(1 << p.page_shift, C::BLOCK_N);
#pragma unroll
    for (int i = 0; i < MAX_BOXES; ++i)
      if (i * rows < C::BLOCK_N) page[i] = table[min((n0 + i * rows) >> p.page_shift, p.pages_per_seq - 1)];
  }
  template <int WIDTH>
  __device__ __forceinline__ void load(unsigned dst, const tensor_map* map, unsigned bar, const fwd_params& p, int n0,
                                       int kv_head) const {
    constexpr int W = swizzle<WIDTH>::W;
    const int rows = min(1 << p.page_shift, C::BLOCK_N), in_page = (1 << p.page_shift) - 1;
#pragma unroll
    for (int i = 0; i < MAX_BOXES; ++i) {
      if (i * rows >= C::BLOCK_N) break;
#pragma unroll
      for (int b = 0; b < WIDTH / (W / 2); ++b)
        tma_load_4d(dst + b * C::BLOCK_N * W + i * rows * W, map, bar, b * (W / 2), (n0 + i * rows) & in_page, kv_head,
                    page[i]);
    }
  }
  /// The whole copy of one tile of sequence `batch` from key n0 into a ring slot: the lookups, the
  /// wait for the slot (empty, at `phase`), the byte count on `full`, the boxes.
  template <int WIDTH>
  __device__ __forceinline__ static void copy(const fwd_params& p, int batch, int n0, int kv_head, unsigned empty,
                                              unsigned phase, unsigned full, int bytes, unsigned dst,
                                              const tensor_map* map) {
    paged_tile pages;
    pages.lookup(p, p.block_table + (long long)batch * p.pages_per_seq, n0);
    mbar_wait(empty, phase);
    mbar_arrive_expect_tx(full, bytes);
    pages.template load<WIDTH>(dst, map, full, p, n0, kv_head);
  }
};

template <class C>
__device__ __forceinline__ void produce(const hopper_params& hp, const hopper_smem<C>& sm) {
  const fwd_params& p = hp.p;
  tma_prefetch(&hp.q_map);
  tma_prefetch(&hp.k_map);
  tma_prefetch(&hp.v_map);
  const block_masks<C> masks(p);
  int kv_it = 0, tile_it = 0;
  // The j-th K/V tile of the range that starts at tile `first` (0 but for a window), from row
  // k_row0 (a packed batch's sequence; else 0 of its batch entry).
  // PAGED: the tile's pages, looked up before the wait for its slot (batch: the sequence).
  auto load_k = [&](int j, int first, int k_row0, int kv_head, int batch) {
    const ring_pos r = ring_at<C::STAGES>(kv_it + j);
    if constexpr (C::PAGED) {
      return paged_tile<C>::template copy<C::D>(p, batch, (first + j) * C::BLOCK_N, kv_head, sm.k_empty(r.stage),
                                                r.phase ^ 1u, sm.k_full(r.stage), C::KV_BYTES, sm.k(r.stage), &hp.k_map);
    }
    mbar_wait(sm.k_empty(r.stage), r.phase ^ 1u);
    mbar_arrive_expect_tx(sm.k_full(r.stage), C::KV_BYTES);
    tma_load_tile<C>(sm.k(r.stage), &hp.k_map, sm.k_full(r.stage), C::BLOCK_N, k_row0 + (first + j) * C::BLOCK_N,
                     kv_head, batch);
  };
  auto load_v = [&](int j, int first, int k_row0, int kv_head, int batch) {
    const ring_pos r = ring_at<C::STAGES>(kv_it + j);
    if constexpr (C::PAGED) {
      return paged_tile<C>::template copy<C::DV>(p, batch, (first + j) * C::BLOCK_N, kv_head, sm.v_empty(r.stage),
                                                 r.phase ^ 1u, sm.v_full(r.stage), C::V_BYTES, sm.v(r.stage), &hp.v_map);
    }
    mbar_wait(sm.v_empty(r.stage), r.phase ^ 1u);
    mbar_arrive_expect_tx(sm.v_full(r.stage), C::V_BYTES);
    tma_load_tile<C, C::DV>(sm.v(r.stage), &hp.v_map, sm.v_full(r.stage), C::BLOCK_N, k_row0 + (first + j) * C::BLOCK_N,
                     kv_head, batch);
  };
  for (int t = blockIdx.x; t < hp.tiles; t += gridDim.x, ++tile_it) {
    const work_tile<C> w = work_at<C>(hp, t);
    if (C::VARLEN && w.past_end(p)) {  // no Q slot taken: the consumers skip it too
      --tile_it;
      continue;
    }
    const tile_coord& tc = w.tc;
    const hopper_mask<C> mask = masks.at(p, w);
    const int m0 = w.m0(), kv_head = C::PACK ? tc.head : tc.head / p.group;
    // A packed batch is one batch entry whose sequences are rows: (row, head, 0) coordinates.
    const int batch = C::VARLEN ? 0 : tc.batch, k_row0 = w.seq.k_row0();
    const kv_tile_range range = tile_range<C>(mask, w, p);
    const int first = C::WINDOW || C::SPLIT ? range.first : 0, n = range.end - first;
    if (n > 0) load_k(0, first, k_row0, kv_head, batch);
    const ring_pos rq = ring_at<C::Q_BUFS>(tile_it);
    mbar_wait(sm.q_empty(rq.stage), rq.phase ^ 1u);
    mbar_arrive_expect_tx(sm.q_full(rq.stage), C::Q_BYTES);
    if constexpr (C::PACK) {  // {column, head in the group, row, K/V head, batch}: rows in packed order
      constexpr int W = swizzle<C::D>::W;
#pragma unroll
      for (int b = 0; b < C::D / (W / 2); ++b)
        tma_load_5d(sm.q(rq.stage) + b * C::BLOCK_M * W, &hp.q_map, sm.q_full(rq.stage), b * (W / 2), 0,
                    m0 / pack_slots(p), kv_head, batch);
    } else {
      tma_load_tile<C>(sm.q(rq.stage), &hp.q_map, sm.q_full(rq.stage), C::BLOCK_M, w.seq.q_row0() + m0, tc.head, batch);
    }
    for (int j = 0; j + 1 < n; ++j) {
      load_k(j + 1, first, k_row0, kv_head, batch);
      load_v(j, first, k_row0, kv_head, batch);
    }
    if (n > 0) load_v(n - 1, first, k_row0, kv_head, batch);
    kv_it += n;
  }
}

}  // namespace attn_k
