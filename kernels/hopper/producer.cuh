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

/// The PIECES boxes of one tile: `rows` rows from `row0` of (head, batch), piece b at b * rows * W.
template <class C>
__device__ __forceinline__ void tma_load_tile(unsigned dst, const tensor_map* map, unsigned bar, int rows, int row0,
                                              int head, int batch) {
#pragma unroll
  for (int b = 0; b < C::PIECES; ++b)
    tma_load_4d(dst + b * rows * swizzle<C::D>::W, map, bar, b * C::SPAN, row0, head, batch);
}

template <class C>
__device__ __forceinline__ void produce(const hopper_params& hp, const hopper_smem<C>& sm) {
  const fwd_params& p = hp.p;
  tma_prefetch(&hp.q_map);
  tma_prefetch(&hp.k_map);
  tma_prefetch(&hp.v_map);
  const hopper_mask<C> mask = hopper_mask_of<C>(p);
  int kv_it = 0, tile_it = 0;
  // The j-th K/V tile of the range that starts at tile `first` (0 but for a window).
  auto load_k = [&](int j, int first, int kv_head, int batch) {
    const ring_pos r = ring_at<C::STAGES>(kv_it + j);
    mbar_wait(sm.k_empty(r.stage), r.phase ^ 1u);
    mbar_arrive_expect_tx(sm.k_full(r.stage), C::KV_BYTES);
    tma_load_tile<C>(sm.k(r.stage), &hp.k_map, sm.k_full(r.stage), C::BLOCK_N, (first + j) * C::BLOCK_N, kv_head,
                     batch);
  };
  auto load_v = [&](int j, int first, int kv_head, int batch) {
    const ring_pos r = ring_at<C::STAGES>(kv_it + j);
    mbar_wait(sm.v_empty(r.stage), r.phase ^ 1u);
    mbar_arrive_expect_tx(sm.v_full(r.stage), C::KV_BYTES);
    tma_load_tile<C>(sm.v(r.stage), &hp.v_map, sm.v_full(r.stage), C::BLOCK_N, (first + j) * C::BLOCK_N, kv_head,
                     batch);
  };
  for (int t = blockIdx.x; t < hp.tiles; t += gridDim.x, ++tile_it) {
    const tile_coord tc = tile_at<C::CAUSAL>(hp, t);
    const int m0 = tc.m_block * C::BLOCK_M, kv_head = tc.head / p.group;
    const kv_tile_range range = mask.template range<C::BLOCK_M, C::BLOCK_N>(m0);
    const int first = C::WINDOW ? range.first : 0, n = range.end - first;
    if (n > 0) load_k(0, first, kv_head, tc.batch);
    const ring_pos rq = ring_at<C::Q_BUFS>(tile_it);
    mbar_wait(sm.q_empty(rq.stage), rq.phase ^ 1u);
    mbar_arrive_expect_tx(sm.q_full(rq.stage), C::Q_BYTES);
    tma_load_tile<C>(sm.q(rq.stage), &hp.q_map, sm.q_full(rq.stage), C::BLOCK_M, m0, tc.head, tc.batch);
    for (int j = 0; j + 1 < n; ++j) {
      load_k(j + 1, first, kv_head, tc.batch);
      load_v(j, first, kv_head, tc.batch);
    }
    if (n > 0) load_v(n - 1, first, kv_head, tc.batch);
    kv_it += n;
  }
}

}  // namespace attn_k
