#pragma once
// A consumer warpgroup's epilogue: O normalized into its 64 rows of the O tile (swizzled, as the
// copy engine reads it; stmatrix, 16 columns of a warp's 16 rows per instruction), then one TMA
// store per swizzle span issued by the warpgroup's first
// thread; the store runs on while the warpgroup starts its next tile. The LSE goes out directly.
// Before the tile is written again, the previous store must have read it (bulk_wait_read).
// VARLEN: a warpgroup whose 64 rows cross its sequence's end stores its rows of O one by one
// from shared memory (a box would write the next sequence's rows); the LSE is [H, total_q].
// PACK: O through a 5-d map that puts the packed rows back in their heads; SPLIT: store_partial.
#include "common/hopper_ptx.cuh"
#include "hopper/config.cuh"
#include "hopper/mainloop.cuh"
#include "hopper/scheduler.cuh"

namespace attn_k {

/// Named barriers CONSUMERS + 1 + wg: one per consumer warpgroup, after the ping-pong ones.
template <class C>
__device__ __forceinline__ int epilogue_barrier(int wg) {
  return 1 + C::CONSUMERS + wg;
}

/// `rows` rows of O from row `tile_row` of the O tile at o_smem (swizzled) to global memory from
/// row `row0` of head `head`, 16 bytes a thread at a time over a warpgroup.
template <class C>
__device__ __forceinline__ void store_rows(const fwd_params& p, unsigned o_smem, int tile_row, int rows,
                                           long long row0, int head) {
  constexpr int CHUNKS = C::O_COLS / 8;  // 16-byte chunks of a row (O's columns, not its tile's padding)
  char* o = static_cast<char*>(p.o) + 2 * (row0 * p.o_row_stride + (long long)head * p.o_head_stride);
  for (int i = threadIdx.x % 128; i < rows * CHUNKS; i += 128) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    *reinterpret_cast<uint4*>(o + 2 * (r * p.o_row_stride + c * 8)) =
        ld_shared_v4(o_smem + tile_offset<C::DV>(tile_row + r, c, C::BLOCK_M));
  }
}

template <class C>
__device__ __forceinline__ void store_tile(const hopper_params& hp, const hopper_smem<C>& sm,
                                           const tile_state<C>& st, const tile_coord& tc,
                                           const tile_sequence<C::VARLEN, C::LENS>& seq, int wg, int q_buf) {
  const fwd_params& p = hp.p;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool leader = threadIdx.x % 128 == 0;
  const int m0 = tc.m_block * C::BLOCK_M;
  const unsigned o_smem = sm.o(q_buf);
  if (C::O_SMEM) {  // the last tile's store has read these rows
    if (leader) bulk_wait_read();
    named_sync(epilogue_barrier<C>(wg), 128);
  }
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quad_sum(st.row_sum[h]);
    inv[h] = sum > 0.f ? 1.f / sum : 0.f;
    const int r = warp * 16 + g + h * 8;
    if constexpr (C::PACK) {  // packed row m: query row m / S of head kv_head * group + m % S (S slots)
      const int m = m0 + r, slots = pack_slots(p);
      if (t == 0 && m < tile_rows<C>(p) && m % slots < p.group)
        p.lse[((long long)tc.batch * p.heads + tc.head * p.group + m % slots) * p.q_len + m / slots] =
            row_lse(st.row_max[h], sum, p.scale_log2);
    } else if (t == 0 && m0 + r < seq.q_len(p)) {
      const float lse = row_lse(st.row_max[h], sum, p.scale_log2);
      if constexpr (C::VARLEN) p.lse[(long long)tc.head * p.total_q + seq.q_row0() + m0 + r] = lse;
      else p.lse[((long long)tc.batch * p.heads + tc.head) * p.q_len + m0 + r] = lse;
    }
  }
  // Matrices 0-3 of a 16-column step: rows 0-7 and 8-15 of the warp's 16, in chunk df, then df + 1.
  const int mi = lane / 8, row = warp * 16 + (mi % 2) * 8 + lane % 8;
#pragma unroll
  for (int df = 0; df < C::DV / 8; df += 2) {
    const unsigned r[4] = {pack2<C::BF16>(st.acc[4 * df + 0] * inv[0], st.acc[4 * df + 1] * inv[0]),
                           pack2<C::BF16>(st.acc[4 * df + 2] * inv[1], st.acc[4 * df + 3] * inv[1]),
                           pack2<C::BF16>(st.acc[4 * df + 4] * inv[0], st.acc[4 * df + 5] * inv[0]),
                           pack2<C::BF16>(st.acc[4 * df + 6] * inv[1], st.acc[4 * df + 7] * inv[1])};
    stmatrix_x4(o_smem + tile_offset<C::DV>(row, df + mi / 2, C::BLOCK_M), r);
  }
  fence_proxy_async();  // the copy engine reads what these generic stores wrote
  named_sync(epilogue_barrier<C>(wg), 128);
  if constexpr (C::VARLEN) {
    const int row0 = m0 + wg * 64, q_len = seq.q_len(p);
    if (row0 < q_len && row0 + 64 > q_len) {  // the next sequence's rows follow: O row by row
      store_rows<C>(p, o_smem, wg * 64, q_len - row0, seq.q_row0() + row0, tc.head);
      if (!C::O_SMEM) {  // Q's tile is free once every thread has read its rows
        named_sync(epilogue_barrier<C>(wg), 128);
        if (leader) mbar_arrive(sm.q_empty(q_buf));
      }
      return;  // with O_SMEM the next tile's epilogue syncs before it writes the tile again
    }
  }
  if (leader) {
    const int row0 = m0 + wg * 64;
    if (C::PACK && row0 < tile_rows<C>(p)) {  // {column, head in the group, row, K/V head, batch}
      constexpr int W = swizzle<C::DV>::W;
#pragma unroll
      for (int b = 0; b < C::DV / (W / 2); ++b)
        tma_store_5d(&hp.o_map, o_smem + b * C::BLOCK_M * W + wg * 64 * W, b * (W / 2), 0, row0 / pack_slots(p),
                     tc.head, tc.batch);
      bulk_commit();
    } else if (!C::PACK && row0 < seq.q_len(p)) {
      // A packed batch is one batch entry whose sequences are rows.
      const int row = C::VARLEN ? seq.q_row0() + row0 : row0, batch = C::VARLEN ? 0 : tc.batch;
      constexpr int W = swizzle<C::DV>::W;  // O is DV wide
#pragma unroll
      for (int b = 0; b < C::DV / (W / 2); ++b)
        tma_store_4d(&hp.o_map, o_smem + b * C::BLOCK_M * W + wg * 64 * W, b * (W / 2), row, tc.head, batch);
      bulk_commit();
    }
    if (!C::O_SMEM) {  // O sat in Q's tile: the next Q may come once the store has read it
      bulk_wait_read();
      mbar_arrive(sm.q_empty(q_buf));
    }
  }
}

/// SPLIT: this warpgroup's rows of a split's normalized O (fp32, O_COLS wide) and LSE, straight
/// from the registers to the workspace (p.o_partial [splits, B, H, Nq, dv], p.lse_partial [splits,
/// B, H, Nq]) for the combine kernel. Q's tile is handed back here when O has no tile of its own
/// (the mainloop does it otherwise).
template <class C>
__device__ __forceinline__ void store_partial(const fwd_params& p, const hopper_smem<C>& sm, const tile_state<C>& st,
                                              const work_tile<C>& w, int q_buf) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long split_rows = (long long)p.batch * p.heads * p.q_len;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quad_sum(st.row_sum[h]);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int m = w.m0() + warp * 16 + g + h * 8;
    const int slots = C::PACK ? pack_slots(p) : 1;
    if (m >= tile_rows<C>(p) || (C::PACK && m % slots >= p.group)) continue;  // past the rows, or a padding slot
    const int head = C::PACK ? w.tc.head * p.group + m % slots : w.tc.head, row = C::PACK ? m / slots : m;
    const long long out = w.split * split_rows + ((long long)w.tc.batch * p.heads + head) * p.q_len + row;
    float* o = p.o_partial + out * C::O_COLS;
#pragma unroll
    for (int df = 0; df < C::O_COLS / 8; ++df)
      *reinterpret_cast<float2*>(o + df * 8 + t * 2) =
          make_float2(st.acc[4 * df + 2 * h] * inv, st.acc[4 * df + 2 * h + 1] * inv);
    if (t == 0)
      p.lse_partial[out] = row_lse(st.row_max[h], sum, p.scale_log2);
  }
  if (!C::O_SMEM && threadIdx.x % 128 == 0) mbar_arrive(sm.q_empty(q_buf));
}

}  // namespace attn_k
