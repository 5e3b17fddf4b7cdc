#pragma once
// hopper: FlashAttention-3's forward on sm_90a. One producer warpgroup, of which one thread
// issues every copy (TMA, completing on mbarriers with their byte counts), and two or three
// consumer warpgroups of 64 query rows each that never wait on a block-wide barrier: they
// compute on the tensor cores (wgmma), hand each K/V slot back with one arrival per warpgroup,
// and store O through shared memory with TMA. A block walks tiles from the scheduler, so one
// launch can be a persistent grid (a block per SM, two with schedule bit 32) or one block per tile; in a packed
// variable-length batch those tiles are (sequence, query block) pairs. Decode: packed GQA (a
// tile's rows are those of the heads sharing a K/V head) and split-KV (a tile's share of its K/V
// tiles, its O and LSE written in fp32 for the combine kernel): hopper/config.cuh.
//
//   hopper/config.cuh     the compile-time configuration and the shared-memory layout
//   hopper/scheduler.cuh  which tile a block works on, in an L2-friendly order
//   hopper/producer.cuh   the copies: Q, K one tile ahead of V
//   hopper/mainloop.cuh   a consumer's products and softmax over one tile's K/V (overlap, ping-pong)
//   hopper/mma.cuh, hopper/softmax.cuh   the products and the online softmax (shared with wgmma)
//   hopper/epilogue.cuh   O through shared memory and a TMA store, the LSE
//   common/hopper_ptx.cuh the PTX: wgmma groups, mbarriers, TMA, named barriers, setmaxnreg
#include "common/combine.cuh"
#include "hopper/epilogue.cuh"
#include "hopper/mainloop.cuh"
#include "hopper/producer.cuh"

namespace attn_k {

template <class C>
__device__ void hopper_forward(const hopper_params& hp) {
  if constexpr (C::VARLEN) {  // one block per tile: one past its sequence's rows ends at once
    if (gridDim.x >= hp.tiles && work_at<C>(hp, blockIdx.x).past_end(hp.p)) return;
  }
  extern __shared__ __align__(128) unsigned char shared_raw[];
  unsigned char* tiles = shared_raw + ((1024u - (smem_addr(shared_raw) & 1023u)) & 1023u);
  const hopper_smem<C> sm{smem_addr(tiles)};
  if (threadIdx.x == 0) {
    for (int b = 0; b < C::Q_BUFS; ++b) {
      mbar_init(sm.q_full(b), 1);
      mbar_init(sm.q_empty(b), C::CONSUMERS);
    }
    for (int s = 0; s < C::STAGES; ++s) {
      mbar_init(sm.k_full(s), 1);
      mbar_init(sm.k_empty(s), C::CONSUMERS);
      mbar_init(sm.v_full(s), 1);
      mbar_init(sm.v_empty(s), C::CONSUMERS);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == C::CONSUMERS) {
    wg_setmaxnreg_dec<C::PRODUCER_REGS>();
    if (threadIdx.x == C::CONSUMERS * 128) produce<C>(hp, sm);
    return;
  }
  wg_setmaxnreg_inc<C::CONSUMER_REGS>();

  const fwd_params& p = hp.p;
  const block_masks<C> masks(p);
  const int warp = threadIdx.x / 32;
  if (C::PINGPONG && wg == C::CONSUMERS - 1) named_arrive(1, 256);  // warpgroup 0 has the first turn
  tile_state<C> st;
  int kv_it = 0, tile_it = 0;
  for (int t = blockIdx.x; t < hp.tiles; t += gridDim.x, ++tile_it) {
    const work_tile<C> w = work_at<C>(hp, t);
    if (C::VARLEN && w.past_end(p)) {  // the producer skips it too
      --tile_it;
      continue;
    }
    const hopper_mask<C> mask = masks.at(p, w);
    const int m0 = w.m0();
    // The block's K/V tiles: n of them from tile `first` (0 but for a window).
    const kv_tile_range range = tile_range<C>(mask, w, p);
    const int first = C::WINDOW || C::SPLIT ? range.first : 0, n = range.end - first;
    // Tiles [plain.full_first, plain.full_end) of the n need no mask for this warpgroup's 64 rows.
    const int row0 = m0 + wg * 64;
    kv_full_tiles plain;
    if constexpr (C::WINDOW || C::SPLIT) {
      plain = mask.template full_tiles<C::BLOCK_N>(row0, row0 + 63, range);
      plain.full_first -= first, plain.full_end -= first;
    } else {
      plain = mask.template full_tiles<C::BLOCK_N>(row0, kv_tile_range{0, n});
    }
    // TRIM: this warpgroup's own tiles, the block's less the `lead` before and `tail` after that
    // none of its rows see.
    int lead = 0, tail = 0;
    if constexpr (C::TRIM) {
      const kv_tile_range mine = mask.template range<64, C::BLOCK_N>(row0);
      lead = min(max(mine.first - first, 0), n);
      tail = min(max(first + n - mine.end, 0), n - lead);
      plain.full_first -= lead, plain.full_end -= lead;
    }
    const int wg_first = first + lead, wg_n = n - lead - tail;
    // Whether this warpgroup's rows see at most the first half of the last tile's keys.
    const bool half_last = wg_n > 0 && mask.keys_end(row0, 64) <= (wg_first + wg_n - 1) * C::BLOCK_N + C::BLOCK_N / 2;
    // HALF_FIRST: whether they see only the second half of the first tile's keys (a window's left
    // edge; the first row's is the leftmost).
    const bool half_first = C::HALF_FIRST && wg_n >= 2 && mask.keys_begin(row0) >= wg_first * C::BLOCK_N + C::BLOCK_N / 2;
    const ring_pos rq = ring_at<C::Q_BUFS>(tile_it);
    const unsigned q_wg = sm.q(rq.stage) + wg * 64 * swizzle<C::D>::W;  // this warpgroup's rows of every piece
    mbar_wait(sm.q_full(rq.stage), rq.phase);
    if (C::O_SMEM && wg_n == 0 && threadIdx.x % 128 == 0) mbar_arrive(sm.q_empty(rq.stage));
    if constexpr (C::TRIM) skip_tiles<C>(sm, kv_it, lead, wg);
    mainloop<C>(st, hp, sm, q_wg, sm.q_empty(rq.stage), kv_it + lead, wg_first, wg_n, plain, half_last, half_first,
                m0 + warp * 16, mask, wg);
    if constexpr (C::TRIM) skip_tiles<C>(sm, kv_it + lead + wg_n, tail, wg);
    kv_it += n;
    if constexpr (C::SPLIT) store_partial<C>(p, sm, st, w, rq.stage);
    else store_tile<C>(hp, sm, st, w.tc, w.seq, wg, rq.stage);
  }
  if (threadIdx.x % 128 == 0) bulk_wait_read();  // the block's shared memory outlives its stores' reads
}

}  // namespace attn_k
