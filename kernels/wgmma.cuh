#pragma once
// wgmma: the fa2 algorithm on Hopper's warpgroup tensor-core instructions (sm_90a only).
//
// One block owns BLOCK_M = 64 x (warpgroups) query rows of one (batch, head); each warpgroup of
// four warps owns 64 of them, each warp 16, so softmax statistics never leave a warp. Q and the
// K/V tiles live in shared memory in the tensor cores' swizzled layout (128-byte swizzle when D
// is a multiple of 64; see tile_offset), filled by cp.async through a STAGES-deep ring.
// S = Q K^T is one wgmma per 16-wide k step with both operands in shared memory; P stays in
// registers (the S accumulator layout is the A-fragment layout) for O += P V, whose V operand is
// read N-major (transposed) by the tensor cores. Masking, online softmax and the epilogue are
// fa2's.
#include "common/attention.cuh"
#include "common/hopper_ptx.cuh"
#include "common/resources.cuh"
#include "common/swizzle.cuh"
#include "hopper/mma.cuh"
#include "hopper/softmax.cuh"

namespace attn_k {

template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_>
struct wgmma_config {
  static constexpr bool BF16 = BF16_;
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
  static constexpr int DV = D;  ///< V's head dim (hopper/mma.cuh's P V): always D here
  static constexpr int WARPS = WARPS_, STAGES = STAGES_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int CONSUMERS = BLOCK_M / 64;  ///< warpgroups that compute
  /// One warpgroup more than the rows need: it only loads K/V (warp specialization).
  static constexpr bool PRODUCER = WARPS == 4 * CONSUMERS + 4;
  /// Tiles, then K/V full/empty mbarriers, + room to align the tiles (common/resources.cuh).
  static constexpr wgmma_layout LAYOUT{BLOCK_M, BLOCK_N, STAGES, D, 2};
  static constexpr int Q_BYTES = LAYOUT.q_bytes(), KV_BYTES = LAYOUT.kv_bytes(), TILE_BYTES = LAYOUT.tile_bytes();
  static constexpr int SHARED_BYTES = LAYOUT.shared_bytes();
  static_assert(BLOCK_M % 64 == 0 && (WARPS == 4 * CONSUMERS || PRODUCER),
                "64 query rows per warpgroup, plus at most one producer warpgroup");
  /// Registers per thread after setmaxnreg (common/resources.cuh): the producer keeps 40, the
  /// consumers share the rest of what the block was given at launch.
  static constexpr int PRODUCER_REGS = wgmma_producer_registers;
  static constexpr int CONSUMER_REGS = consumer_registers(THREADS, CONSUMERS, PRODUCER_REGS);
  static_assert(!PRODUCER || STAGES >= 2, "the producer keeps a tile in flight: stages >= 2");
  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dim: a multiple of 16 in [32, 256]");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "BLOCK_N: a multiple of 16 up to 256");
  static_assert(STAGES >= 1 && STAGES <= 8, "STAGES in [1, 8]");
};

/// Copies `rows` rows of D elements into the swizzled layout (tile_offset): consecutive threads
/// read consecutive 16-byte chunks of a row. Rows at or past `row_end` are zero-filled.
template <class C>
__device__ __forceinline__ void load_tile_cm(unsigned smem, const elem_bits* base, long long row_stride,
                                             int row0, int row_end, int rows, int tid, int threads) {
  constexpr int CHUNKS = C::D / 8;
  for (int i = tid; i < rows * CHUNKS; i += threads) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    const bool valid = row0 + r < row_end;
    const elem_bits* src = base + (valid ? (row0 + r) * row_stride + c * 8 : 0);
    cp_async_16(smem + tile_offset<C::D>(r, c, rows), src, valid);
  }
}

/// Normalizes O, writes it (16-byte coalesced stores) and the LSE of this warpgroup's 64 rows.
/// O is staged in the warpgroup's own rows of the Q tile, in the same layout (only this
/// warpgroup's S products, all finished, read them), behind a barrier of its 128 threads.
template <class C>
__device__ __forceinline__ void wg_store_output(unsigned char* tiles, const float (&acc)[C::D / 2],
                                                const float (&row_max)[2], const float (&row_sum)[2],
                                                const fwd_params& p, int batch, int head, int m0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quad_sum(row_sum[h]);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int r = warp * 16 + g + h * 8;
#pragma unroll
    for (int df = 0; df < C::D / 8; ++df)
      *reinterpret_cast<unsigned*>(tiles + tile_offset<C::D>(r, df, C::BLOCK_M) + t * 4) =
          pack2<C::BF16>(acc[4 * df + 2 * h] * inv, acc[4 * df + 2 * h + 1] * inv);
    if (t == 0 && m0 + r < p.q_len) {
      p.lse[((long long)batch * p.heads + head) * p.q_len + m0 + r] = row_lse(row_max[h], sum, p.scale_log2);
    }
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
  elem_bits* o = static_cast<elem_bits*>(p.o) + batch * p.q_batch_stride + head * p.q_head_stride;
  constexpr int CHUNKS = C::D / 8;
  for (int i = threadIdx.x % 128; i < 64 * CHUNKS; i += 128) {
    const int r = wg * 64 + i / CHUNKS, c = i % CHUNKS;
    if (m0 + r < p.q_len)
      *reinterpret_cast<uint4*>(o + (m0 + r) * p.q_row_stride + c * 8) =
          *reinterpret_cast<const uint4*>(tiles + tile_offset<C::D>(r, c, C::BLOCK_M));
  }
}

template <class C>
__device__ void wgmma_forward(const fwd_params& p) {
  extern __shared__ __align__(128) unsigned char shared_raw[];
  unsigned char* tiles = shared_raw + ((1024u - (smem_addr(shared_raw) & 1023u)) & 1023u);
  const unsigned q_smem = smem_addr(tiles);
  const unsigned kv_smem = q_smem + C::Q_BYTES;  // stage s: K at 2s, V at 2s + 1
  auto k_stage = [&](int s) { return kv_smem + (2 * s) * C::KV_BYTES; };
  auto v_stage = [&](int s) { return kv_smem + (2 * s + 1) * C::KV_BYTES; };

  const int m_block = C::CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest first
  const int head = blockIdx.y, batch = blockIdx.z;
  const int m0 = m_block * C::BLOCK_M;
  const attention_mask<C::CAUSAL> mask = attention_mask<C::CAUSAL>::of(p);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row0 = m0 + warp * 16;
  // This warpgroup's 64 rows of Q: rows 64 wg .. of every piece.
  const unsigned q_wg = q_smem + (warp / 4) * 64 * swizzle<C::D>::W;

  const head_inputs in = inputs_of(p, batch, head);
  const elem_bits *q = in.q, *k = in.k, *v = in.v;
  // The block's K/V tiles, [range.first, range.end) of the mask: the loops count j from 0, over
  // tile first + j (the ring's slots by j).
  const kv_tile_range range = mask.template range<C::BLOCK_M, C::BLOCK_N>(m0);
  const int first = range.first, n_blocks = range.count();
  // Tiles [0, n_plain) of those need no mask for this warpgroup's 64 rows: later warpgroups of a
  // causal block unmask more of them. (Stopping each warpgroup at its own last visible tile,
  // handing the remaining slots back, was measured too: +1% on short causal shapes, -2% at N=16384.)
  const int n_plain = mask.template full_tiles<C::BLOCK_N>(m0 + (warp / 4) * 64, range).full_end - first;

  float acc[C::D / 2];
  float row_max[2] = {neg_inf(), neg_inf()}, row_sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < C::D / 2; ++i) acc[i] = 0.f;
  float s[C::BLOCK_N / 2], alpha[2];
  unsigned pr[C::BLOCK_N / 16][4];
  // Softmax of tile j (its S in s): masked when it is on the causal diagonal or ragged.
  using row_masks = typename attention_mask<C::CAUSAL>::row_masks;
  auto softmax = [&](int j) {
    if (j < n_plain)
      return wg_softmax<C, false>(s, alpha, row_max, row_sum, (first + j) * C::BLOCK_N, warp_row0,
                                  row_masks{p.kv_len, mask.causal_offset}, p.scale_log2);
    return wg_softmax<C, true>(s, alpha, row_max, row_sum, (first + j) * C::BLOCK_N, warp_row0,
                               row_masks{p.kv_len, mask.causal_offset}, p.scale_log2);
  };

  // Loader threads: all of them, or only the producer warpgroup's.
  const int ltid = C::PRODUCER ? threadIdx.x - C::CONSUMERS * 128 : threadIdx.x;
  constexpr int LTHREADS = C::PRODUCER ? 128 : C::THREADS;
  auto load_q = [&] { load_tile_cm<C>(q_smem, q, p.q_row_stride, m0, p.q_len, C::BLOCK_M, ltid, LTHREADS); };
  auto load_k = [&](int j, int stage) {  // tile first + j
    load_tile_cm<C>(k_stage(stage), k, p.kv_row_stride, (first + j) * C::BLOCK_N, p.kv_len, C::BLOCK_N, ltid,
                    LTHREADS);
  };
  auto load_v = [&](int j, int stage) {
    load_tile_cm<C>(v_stage(stage), v, p.kv_row_stride, (first + j) * C::BLOCK_N, p.kv_len, C::BLOCK_N, ltid,
                    LTHREADS);
  };
  auto load_kv = [&](int j, int stage) {
    load_k(j, stage);
    load_v(j, stage);
  };

  if constexpr (C::PRODUCER) {
    // Warp specialization: the last warpgroup streams K and V through their rings and gives most
    // of its registers to the consumers, which never wait on a block-wide barrier. K and V have
    // their own barriers (FlashAttention-3's design), because K of tile j+1 and V of tile j are
    // in use together: full_*[s] says slot s has landed (128 producer arrivals), empty_*[s] that
    // every consumer thread is done with it. K_j is published once V_j is issued and V_j once
    // K_{j+1} is, so a producer blocked on an empty slot never holds back what the consumers need.
    const unsigned full_k = q_smem + C::TILE_BYTES, full_v = full_k + C::STAGES * 8;
    const unsigned empty_k = full_v + C::STAGES * 8, empty_v = empty_k + C::STAGES * 8;
    if (threadIdx.x == 0)
      for (int st = 0; st < C::STAGES; ++st) {
        mbar_init(full_k + st * 8, 128);
        mbar_init(full_v + st * 8, 128);
        mbar_init(empty_k + st * 8, C::CONSUMERS * 128);
        mbar_init(empty_v + st * 8, C::CONSUMERS * 128);
      }
    __syncthreads();
    if (warp >= 4 * C::CONSUMERS) {
      wg_setmaxnreg_dec<C::PRODUCER_REGS>();
      auto publish = [&](unsigned bar) {  // this thread's copies before the newest group landed
        cp_async_wait<1>();
        fence_proxy_async();
        mbar_arrive(bar);
      };
      if (n_blocks > 0) load_q();  // lands with K_0's group (none: the consumers stage O there)
      for (int j = 0; j < n_blocks; ++j) {
        const int st = j % C::STAGES;
        const unsigned parity = (j / C::STAGES - 1) & 1;
        if (j >= C::STAGES) mbar_wait(empty_k + st * 8, parity);
        load_k(j, st);
        cp_async_commit();
        if (j > 0) publish(full_v + ((j - 1) % C::STAGES) * 8);
        if (j >= C::STAGES) mbar_wait(empty_v + st * 8, parity);
        load_v(j, st);
        cp_async_commit();
        publish(full_k + st * 8);
      }
      if (n_blocks > 0) {
        cp_async_wait<0>();
        fence_proxy_async();
        mbar_arrive(full_v + ((n_blocks - 1) % C::STAGES) * 8);
      }
      return;
    }
    wg_setmaxnreg_inc<C::CONSUMER_REGS>();
    if (n_blocks > 0) {
      mbar_wait(full_k, 0);
      wg_issue_s<C>(s, q_wg, k_stage(0));
      wg_wait<0>();
      wg_fence_operand(s);
      mbar_arrive(empty_k);
      softmax(0);
      wg_pack_p<C>(pr, s);
    }
    for (int j = 0; j + 1 < n_blocks; ++j) {
      const int cur = j % C::STAGES, next = (j + 1) % C::STAGES;
      mbar_wait(full_k + next * 8, ((j + 1) / C::STAGES) & 1);
      mbar_wait(full_v + cur * 8, (j / C::STAGES) & 1);
      wg_issue_s<C>(s, q_wg, k_stage(next));
      wg_issue_pv<C>(acc, pr, v_stage(cur));
      wg_wait<1>();
      wg_fence_operand(s);
      mbar_arrive(empty_k + next * 8);
      const bool grow = softmax(j + 1);
      wg_wait<0>();
      wg_fence_operand(acc);
      mbar_arrive(empty_v + cur * 8);
      if (grow) wg_rescale<C>(acc, alpha);
      wg_pack_p<C>(pr, s);
    }
    if (n_blocks > 0) {
      const int last = n_blocks - 1;
      mbar_wait(full_v + (last % C::STAGES) * 8, (last / C::STAGES) & 1);
      wg_issue_pv<C>(acc, pr, v_stage(last % C::STAGES));
      wg_wait<0>();
      wg_fence_operand(acc);
    }
    wg_store_output<C>(tiles, acc, row_max, row_sum, p, batch, head, m0);
    return;
  }

  load_q();
  cp_async_commit();

  if constexpr (C::STAGES < 3) {
    // In order: S, wait, softmax, P V, wait. With two stages the next tile loads meanwhile.
    // Every iteration commits exactly one (maybe empty) group, as in fa2.
    if constexpr (C::STAGES == 2) {
      if (n_blocks > 0) load_kv(0, 0);
      cp_async_commit();
    }
    for (int j = 0; j < n_blocks; ++j) {
      const int stage = C::STAGES == 2 ? j % 2 : 0;
      if constexpr (C::STAGES == 1) {
        load_kv(j, 0);
        cp_async_commit();
      }
      cp_async_wait<0>();
      fence_proxy_async();
      __syncthreads();  // tile j visible; every warpgroup is done with tile j-1's stage
      if constexpr (C::STAGES == 2) {
        if (j + 1 < n_blocks) load_kv(j + 1, (j + 1) % 2);
      }
      wg_issue_s<C>(s, q_wg, k_stage(stage));
      wg_wait<0>();
      wg_fence_operand(s);
      const bool grow = softmax(j);
      wg_pack_p<C>(pr, s);
      if (grow) wg_rescale<C>(acc, alpha);
      wg_issue_pv<C>(acc, pr, v_stage(stage));
      wg_wait<0>();
      wg_fence_operand(acc);
      if constexpr (C::STAGES == 1) __syncthreads();
      else cp_async_commit();
    }
  } else {
    // Overlapped (FlashAttention-3's intra-warpgroup pipelining): in iteration j, S of tile j+1
    // is issued before P V of tile j, and its softmax runs while P V is on the tensor cores.
    // Tiles j and j+1 are in use, the stage of tile j-1 is refilled with tile j+STAGES-1. The
    // prologue commits tiles 0..STAGES-2 as one group each, every iteration exactly one more.
#pragma unroll
    for (int st = 0; st < C::STAGES - 1; ++st) {
      if (st < n_blocks) load_kv(st, st);
      cp_async_commit();
    }
    cp_async_wait<C::STAGES - 2>();
    fence_proxy_async();
    __syncthreads();
    if (n_blocks > 0) {
      wg_issue_s<C>(s, q_wg, k_stage(0));
      wg_wait<0>();
      wg_fence_operand(s);
      softmax(0);
      wg_pack_p<C>(pr, s);
    }
    // The last tile is peeled off, so no branch sits between a wgmma's issue and its wait (ptxas
    // serializes all wgmmas when one path might read an accumulator in flight: warning C7514).
    for (int j = 0; j + 1 < n_blocks; ++j) {
      cp_async_wait<C::STAGES - 3>();
      fence_proxy_async();
      __syncthreads();  // tile j+1 visible; every warpgroup is done with tile j-1
      const int refill = j + C::STAGES - 1;
      if (refill < n_blocks) load_kv(refill, refill % C::STAGES);
      cp_async_commit();
      wg_issue_s<C>(s, q_wg, k_stage((j + 1) % C::STAGES));
      wg_issue_pv<C>(acc, pr, v_stage(j % C::STAGES));
      wg_wait<1>();
      wg_fence_operand(s);
      const bool grow = softmax(j + 1);
      wg_wait<0>();
      wg_fence_operand(acc);
      if (grow) wg_rescale<C>(acc, alpha);
      wg_pack_p<C>(pr, s);
    }
    if (n_blocks > 0) {  // tile n_blocks-1 became visible at the last barrier
      wg_issue_pv<C>(acc, pr, v_stage((n_blocks - 1) % C::STAGES));
      wg_wait<0>();
      wg_fence_operand(acc);
    }
  }
  cp_async_wait<0>();
  // Every thread loaded part of every warpgroup's Q rows: when no tile was attended (a block whose
  // rows see no key), nothing has ordered those copies before the rows stage O.
  __syncthreads();
  wg_store_output<C>(tiles, acc, row_max, row_sum, p, batch, head, m0);
}

}  // namespace attn_k
