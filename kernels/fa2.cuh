#pragma once
// fa2: a FlashAttention-2-style fused forward pass on mma.sync (sm_80+).
//
// One block owns BLOCK_M query rows of one (batch, head); each warp owns BLOCK_M / WARPS of those
// rows, so softmax statistics never cross warps. The Q tile stays in shared memory; K/V tiles
// stream through a STAGES-deep cp.async ring. S = Q K^T and O += P V run on the tensor cores with
// fp32 accumulation; P never leaves registers. Only tiles on the causal diagonal or past the end
// of the keys are masked. The N x N matrix is never written: O and the per-row LSE are.
//
// Shared memory rows are padded by 8 elements (16 bytes): the row pitch is then an odd number of
// 16-byte chunks, which keeps ldmatrix and cp.async free of bank conflicts for every head dim.
#include "common/attention.cuh"
#include "common/resources.cuh"

namespace attn_k {

template <bool B>
struct bool_constant {
  static constexpr bool value = B;
};

template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_>
struct fa2_config {
  static constexpr bool BF16 = BF16_;
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
  static constexpr int WARPS = WARPS_, STAGES = STAGES_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int WARP_M = BLOCK_M / WARPS;  ///< query rows per warp
  static constexpr int MI = WARP_M / 16;          ///< 16-row mma tiles per warp
  static constexpr int PITCH = D + 8;             ///< shared-memory row pitch, elements
  static constexpr int Q_ELEMS = BLOCK_M * PITCH;
  static constexpr int KV_ELEMS = BLOCK_N * PITCH;
  static constexpr int SHARED_BYTES = padded_tiles_bytes(BLOCK_M, BLOCK_N, STAGES, D, 2);  ///< = the host's
  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dim: a multiple of 16 in [32, 256]");
  static_assert(WARP_M % 16 == 0 && WARP_M >= 16, "each warp needs whole 16-row mma tiles");
  static_assert(BLOCK_N % 16 == 0, "BLOCK_N: a multiple of 16");
  static_assert(STAGES >= 1 && STAGES <= 8, "STAGES in [1, 8]");
};

/// Copies `rows` rows of D elements starting at global row `row0` into a padded shared tile,
/// zero-filling rows at or past `row_end` so that they contribute nothing.
template <class C>
__device__ __forceinline__ void load_tile(unsigned smem, const elem_bits* base, long long row_stride,
                                          int row0, int row_end, int rows) {
  constexpr int CHUNKS = C::D / 8;
  for (int c = threadIdx.x; c < rows * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    const bool valid = row0 + r < row_end;
    const elem_bits* src = base + (valid ? (row0 + r) * row_stride + col : 0);
    cp_async_16(smem + (r * C::PITCH + col) * 2, src, valid);
  }
}

/// One K/V tile: S = Q K^T, online softmax, O += P V. MASK: the tile is partial (the mask applies).
template <class C, bool MASK>
__device__ __forceinline__ void attend_tile(unsigned q_smem, unsigned k_smem, unsigned v_smem,
                                            float (&acc)[C::MI][C::D / 8][4],
                                            float (&row_max)[C::MI][2], float (&row_sum)[C::MI][2],
                                            int n0, int first_row, const typename attention_mask<C::CAUSAL>::row_masks& mask,
                                            float scale_log2) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float s[C::MI][C::BLOCK_N / 8][4];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int nf = 0; nf < C::BLOCK_N / 8; ++nf)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[mi][nf][e] = 0.f;

  // S = Q K^T. A fragments from Q (row-major), B fragments from K rows (col-major B = K^T).
  const int a_row = warp * C::WARP_M + (lane % 8) + ((lane / 8) % 2) * 8, a_col = (lane / 16) * 8;
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;
#pragma unroll
  for (int kk = 0; kk < C::D / 16; ++kk) {
    unsigned a[C::MI][4];
#pragma unroll
    for (int mi = 0; mi < C::MI; ++mi)
      ldmatrix_x4(a[mi], q_smem + ((a_row + mi * 16) * C::PITCH + kk * 16 + a_col) * 2);
#pragma unroll
    for (int nj = 0; nj < C::BLOCK_N / 16; ++nj) {
      unsigned b[4];
      ldmatrix_x4(b, k_smem + ((nj * 16 + b_row) * C::PITCH + kk * 16 + b_col) * 2);
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) {
        mma_16816<C::BF16>(s[mi][2 * nj], a[mi], b[0], b[1]);
        mma_16816<C::BF16>(s[mi][2 * nj + 1], a[mi], b[2], b[3]);
      }
    }
  }

  // Mask, then the online softmax update. Thread holds rows g and g + 8 of each 16-row tile.
  const int g = lane / 4, t = lane % 4;
  float alpha[C::MI][2];
  bool any_grow = false;
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
    quad_rows_softmax<C::BLOCK_N, MASK, true>([&](int nf, int k) -> float& { return s[mi][nf][k]; }, mask,
                                              first_row + warp * C::WARP_M + mi * 16 + g, n0, t, row_max[mi],
                                              row_sum[mi], alpha[mi], any_grow, scale_log2);

  // P in the element type: the accumulator layout of two adjacent 8-column tiles is exactly an
  // A fragment of a 16-column k-step. Packing now lets the fp32 scores die before P V.
  unsigned p[C::MI][C::BLOCK_N / 16][4];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int kk = 0; kk < C::BLOCK_N / 16; ++kk) {
      p[mi][kk][0] = pack2<C::BF16>(s[mi][2 * kk][0], s[mi][2 * kk][1]);
      p[mi][kk][1] = pack2<C::BF16>(s[mi][2 * kk][2], s[mi][2 * kk][3]);
      p[mi][kk][2] = pack2<C::BF16>(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
      p[mi][kk][3] = pack2<C::BF16>(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
    }
  if (__any_sync(0xffffffffu, any_grow))
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int df = 0; df < C::D / 8; ++df) {
      acc[mi][df][0] *= alpha[mi][0];
      acc[mi][df][1] *= alpha[mi][0];
      acc[mi][df][2] *= alpha[mi][1];
      acc[mi][df][3] *= alpha[mi][1];
    }

  // O += P V; V is row-major [key][d], so its B fragments come through ldmatrix .trans.
  const int v_row = (lane % 8) + ((lane / 8) % 2) * 8, v_col = (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < C::BLOCK_N / 16; ++kk) {
#pragma unroll
    for (int dj = 0; dj < C::D / 16; ++dj) {
      unsigned b[4];
      ldmatrix_x4_trans(b, v_smem + ((kk * 16 + v_row) * C::PITCH + dj * 16 + v_col) * 2);
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) {
        mma_16816<C::BF16>(acc[mi][2 * dj], p[mi][kk], b[0], b[1]);
        mma_16816<C::BF16>(acc[mi][2 * dj + 1], p[mi][kk], b[2], b[3]);
      }
    }
  }
}

template <class C>
__device__ void fa2_forward(const fwd_params& p) {
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const unsigned q_smem = smem_addr(shared_raw);
  const unsigned kv_smem = q_smem + C::Q_ELEMS * 2;  // stage s: K at 2s, V at 2s + 1
  auto k_stage = [&](int s) { return kv_smem + (2 * s) * C::KV_ELEMS * 2; };
  auto v_stage = [&](int s) { return kv_smem + (2 * s + 1) * C::KV_ELEMS * 2; };

  // Causal: the heaviest query blocks (last rows) are launched first.
  const int m_block = C::CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z;
  const int m0 = m_block * C::BLOCK_M;
  const attention_mask<C::CAUSAL> mask = attention_mask<C::CAUSAL>::of(p);

  const head_inputs in = inputs_of(p, batch, head);
  const elem_bits *q = in.q, *k = in.k, *v = in.v;
  const kv_tile_range range = mask.template range<C::BLOCK_M, C::BLOCK_N>(m0);
  // Tiles [full_first, full_end) are attended unmasked. Causal: two loops rather than a branch per
  // tile keep the mask's registers out of the hot loop (measured faster on the H200; for
  // non-causal the single loop below was faster).
  const kv_full_tiles full = mask.template full_tiles<C::BLOCK_N>(m0, range);

  float acc[C::MI][C::D / 8][4];
  float row_max[C::MI][2], row_sum[C::MI][2];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int df = 0; df < C::D / 8; ++df)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][df][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = neg_inf();
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  load_tile<C>(q_smem, q, p.q_row_stride, m0, p.q_len, C::BLOCK_M);
  cp_async_commit();
  auto load_kv = [&](int j, int stage) {
    load_tile<C>(k_stage(stage), k, p.kv_row_stride, j * C::BLOCK_N, p.kv_len, C::BLOCK_N);
    load_tile<C>(v_stage(stage), v, p.kv_row_stride, j * C::BLOCK_N, p.kv_len, C::BLOCK_N);
  };
  auto attend = [&](int j, int stage, auto masked) {
    attend_tile<C, decltype(masked)::value>(q_smem, k_stage(stage), v_stage(stage), acc, row_max,
                                            row_sum, j * C::BLOCK_N, m0, mask.rows(),
                                            p.scale_log2);
  };

  // Tile j of the range goes through ring stage (j - range.first) % STAGES. The tiles are
  // attended in three runs: the partial ones before the full ones (none for today's masks: a
  // window's leading edge), the full ones unmasked, then the partial ones after them (the causal
  // diagonal, a ragged last tile).
  auto stage_of = [&](int j) { return (j - range.first) % C::STAGES; };
  auto runs = [&](auto&& step) {
    for (int j = range.first; j < full.full_first; ++j) step(j, bool_constant<true>());
    for (int j = full.full_first; j < full.full_end; ++j) step(j, bool_constant<false>());
    for (int j = full.full_end; j < range.end; ++j) step(j, bool_constant<true>());
  };
  if constexpr (C::STAGES == 1) {
    runs([&](int j, auto masked) {
      load_kv(j, 0);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      attend(j, 0, masked);
      __syncthreads();
    });
  } else {
    // Prologue: the range's first STAGES-1 tiles in flight. Every iteration commits exactly one
    // group (maybe empty), so "tile j has landed" is always "at most STAGES-2 groups pending".
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s) {
      if (s < range.count()) load_kv(range.first + s, s);
      cp_async_commit();
    }
    auto refill = [&](int j) {  // after the barrier: every warp is done with tile j-1's stage
      const int next = j + C::STAGES - 1;
      if (next < range.end) load_kv(next, stage_of(next));
      cp_async_commit();
    };
    if constexpr (C::CAUSAL) {
      runs([&](int j, auto masked) {
        cp_async_wait<C::STAGES - 2>();
        __syncthreads();  // tile j visible to all
        refill(j);
        attend(j, stage_of(j), masked);
      });
    } else {
      // Only a ragged last tile is partial: one loop with the branch after the loads (measured
      // faster than two loops, and than the branch around the whole step).
      for (int j = range.first; j < range.end; ++j) {
        cp_async_wait<C::STAGES - 2>();
        __syncthreads();
        refill(j);
        if (mask.template past_keys<C::BLOCK_N>(j))
          attend(j, stage_of(j), bool_constant<true>());
        else
          attend(j, stage_of(j), bool_constant<false>());
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // all warps done with shared memory: Q's tile becomes the output staging area

  // Normalize, write O (through shared memory, for 16-byte coalesced stores) and the LSE.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  elem_bits* o_stage = reinterpret_cast<elem_bits*>(shared_raw);
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sum = quad_sum(row_sum[mi][h]);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int r = warp * C::WARP_M + mi * 16 + g + h * 8;
#pragma unroll
      for (int df = 0; df < C::D / 8; ++df) {
        *reinterpret_cast<unsigned*>(&o_stage[r * C::PITCH + df * 8 + t * 2]) =
            pack2<C::BF16>(acc[mi][df][h * 2] * inv, acc[mi][df][h * 2 + 1] * inv);
      }
      if (t == 0 && m0 + r < p.q_len) {
        const float lse = sum > 0.f ? (row_max[mi][h] * p.scale_log2 + log2f(sum)) * 0.69314718056f
                                    : neg_inf();
        p.lse[((long long)batch * p.heads + head) * p.q_len + m0 + r] = lse;
      }
    }
  }
  __syncthreads();
  elem_bits* o = static_cast<elem_bits*>(p.o) + batch * p.q_batch_stride + head * p.q_head_stride;
  constexpr int CHUNKS = C::D / 8;
  for (int c = threadIdx.x; c < C::BLOCK_M * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    if (m0 + r < p.q_len)
      *reinterpret_cast<uint4*>(o + (m0 + r) * p.q_row_stride + col) =
          *reinterpret_cast<const uint4*>(&o_stage[r * C::PITCH + col]);
  }
}

}  // namespace attn_k
