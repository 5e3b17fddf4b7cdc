#pragma once
// mfma: the fa2 algorithm on AMD CDNA matrix cores (gfx90a), wave64, compiled with hiprtc.
// COMPILE-VERIFIED ONLY: no AMD GPU has run this kernel yet.
//
// Same algorithm as fa2: a block owns BLOCK_M query rows of one (batch, head), each wavefront
// 16 * MI of them; the Q tile sits in LDS, K/V tiles go through a STAGES-deep LDS ring; online
// softmax with exp2 and the scale folded in, O rescaled only when a row max grows by more than
// 2^8; masking only on the causal diagonal and past the last key; GQA, cross-attention, causal
// aligned bottom-right; the per-row LSE is written.
//
// Layout trick (the counterpart of fa2's accumulator-as-A-fragment): with
// v_mfma_f32_16x16x16{bf16_1k,f16}, A[i][k] sits in lane i + 16*(k/4), item k%4; B[k][j] in lane
// j + 16*(k/4), item k%4; D[i][j] in lane j + 16*(i/4), item i%4. Computing S^T = K Q^T puts
// query row r = lane%16 and keys 4*(lane/16)+e in each lane, which is exactly the B operand of
// O^T = V^T P^T, whose result again has row = lane%16. So every lane keeps one row's softmax
// state, row reductions are two shuffles (xor 16, 32), and P never leaves registers.
#include "common/attention.cuh"
#include "common/resources.cuh"

namespace attn_k {

typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef short shortx4 __attribute__((ext_vector_type(4)));
typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));

template <bool BF16>
__device__ __forceinline__ floatx4 mfma_16x16x16(shortx4 a, shortx4 b, floatx4 c) {
  if constexpr (BF16) {
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
  } else {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(halfx4, a),
                                                 __builtin_bit_cast(halfx4, b), c, 0, 0, 0);
  }
}

template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WAVES_, int STAGES_, bool CAUSAL_>
struct mfma_config {
  static constexpr bool BF16 = BF16_;
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
  static constexpr int WAVES = WAVES_, STAGES = STAGES_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int THREADS = WAVES * 64;
  static constexpr int WAVE_M = BLOCK_M / WAVES;
  static constexpr int MI = WAVE_M / 16;
  static constexpr int PITCH = D + 8;  // 16-byte aligned rows
  static constexpr int Q_ELEMS = BLOCK_M * PITCH;
  static constexpr int KV_ELEMS = BLOCK_N * PITCH;
  static constexpr int LDS_ELEMS = padded_tiles_bytes(BLOCK_M, BLOCK_N, STAGES, D, 2) / 2;  ///< = the host's
  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dim: a multiple of 16 in [32, 256]");
  static_assert(WAVE_M % 16 == 0 && WAVE_M >= 16, "each wavefront needs whole 16-row tiles");
  static_assert(BLOCK_N % 16 == 0, "BLOCK_N: a multiple of 16");
  static_assert(STAGES >= 1 && STAGES <= 4, "STAGES in [1, 4]");
  static_assert(LDS_ELEMS * 2 <= 65536, "LDS: 64 KiB per workgroup");
};

/// Global -> LDS, 16 bytes a thread at a time; rows at or past row_end become zeros.
template <class C>
__device__ __forceinline__ void mfma_load_tile(elem_bits* lds, const elem_bits* base, long long row_stride,
                                               int row0, int row_end, int rows) {
  constexpr int CHUNKS = C::D / 8;
  for (int c = threadIdx.x; c < rows * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    uint4 v = {0u, 0u, 0u, 0u};
    if (row0 + r < row_end) v = *reinterpret_cast<const uint4*>(base + (row0 + r) * row_stride + col);
    *reinterpret_cast<uint4*>(lds + r * C::PITCH + col) = v;
  }
}

__device__ __forceinline__ shortx4 lds_row4(const elem_bits* p) {
  return *reinterpret_cast<const shortx4*>(p);  // 4 consecutive elements, 8-byte aligned
}

/// One K/V tile for this wavefront's rows: S^T = K Q^T, online softmax, O^T += V^T P^T.
template <class C, bool MASK>
__device__ __forceinline__ void mfma_attend_tile(const elem_bits* q_lds, const elem_bits* k_lds,
                                                 const elem_bits* v_lds, floatx4 (&acc)[C::MI][C::D / 16],
                                                 float (&row_max)[C::MI], float (&row_sum)[C::MI], int n0,
                                                 int first_row, const typename attention_mask<C::CAUSAL>::row_masks& mask,
                                                 float scale_log2) {
  const int lane = threadIdx.x % 64, wave = threadIdx.x / 64;
  const int r16 = lane % 16, g4 = lane / 16;
  constexpr int NB = C::BLOCK_N / 16;
  floatx4 s[C::MI][NB];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) s[mi][nb] = floatx4{0.f, 0.f, 0.f, 0.f};

  // S^T[key][row]: A = K rows (key = r16), B = Q rows (row = r16), 4 consecutive d per lane.
#pragma unroll
  for (int kk = 0; kk < C::D / 16; ++kk) {
    shortx4 q[C::MI];
#pragma unroll
    for (int mi = 0; mi < C::MI; ++mi)
      q[mi] = lds_row4(q_lds + (wave * C::WAVE_M + mi * 16 + r16) * C::PITCH + kk * 16 + 4 * g4);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const shortx4 k = lds_row4(k_lds + (nb * 16 + r16) * C::PITCH + kk * 16 + 4 * g4);
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) s[mi][nb] = mfma_16x16x16<C::BF16>(k, q[mi], s[mi][nb]);
    }
  }

  // Each lane: one query row (r16), keys nb*16 + 4*g4 + e; the row is shared by lanes 16 apart.
  float alpha[C::MI];
  bool any_grow = false;
  auto row_max_of = [](float m) {
    m = fmaxf(m, __shfl_xor(m, 16));
    return fmaxf(m, __shfl_xor(m, 32));
  };
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
    // The step takes float&: vector elements do not bind to references, so the row goes through
    // a plain array (registers either way).
    float row_s[NB * 4];
#pragma unroll
    for (int i = 0; i < NB * 4; ++i) row_s[i] = s[mi][i / 4][i % 4];
    auto x = [&](int i) -> float& { return row_s[i]; };
    auto col = [](int i) { return i / 4 * 16 + i % 4; };
    const int row = first_row + wave * C::WAVE_M + mi * 16 + r16;
    if constexpr (MASK)
      online_softmax_step<NB * 4, 1, true>(x, row_max_of, row_max[mi], row_sum[mi], alpha[mi], any_grow, scale_log2,
                                           col, mask.template row<4>(row, n0, g4));
    else
      online_softmax_step<NB * 4, 1, true>(x, row_max_of, row_max[mi], row_sum[mi], alpha[mi], any_grow, scale_log2,
                                           col, no_limit{});
#pragma unroll
    for (int i = 0; i < NB * 4; ++i) s[mi][i / 4][i % 4] = row_s[i];
  }
  if (__any(any_grow)) {
#pragma unroll
    for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
      for (int db = 0; db < C::D / 16; ++db) acc[mi][db] *= alpha[mi];
  }

  // P^T as the B operand: already in place (row = r16, keys 4*g4 + e).
  shortx4 p[C::MI][NB];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) p[mi][nb][e] = static_cast<short>(from_float<C::BF16>(s[mi][nb][e]));

  // O^T[d][row] += V^T P^T: A[d][key] = V[key][d], lane d = r16 with keys 4*g4 + e (strided LDS).
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int db = 0; db < C::D / 16; ++db) {
      shortx4 v;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        v[e] = static_cast<short>(v_lds[(nb * 16 + 4 * g4 + e) * C::PITCH + db * 16 + r16]);
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) acc[mi][db] = mfma_16x16x16<C::BF16>(v, p[mi][nb], acc[mi][db]);
    }
}

template <class C>
__device__ void mfma_forward(const fwd_params& p) {
  __shared__ __attribute__((aligned(16))) elem_bits lds[C::LDS_ELEMS];
  elem_bits* q_lds = lds;
  auto k_stage = [&](int s) { return lds + C::Q_ELEMS + (2 * s) * C::KV_ELEMS; };
  auto v_stage = [&](int s) { return lds + C::Q_ELEMS + (2 * s + 1) * C::KV_ELEMS; };

  const int m_block = C::CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest first
  const int head = blockIdx.y, batch = blockIdx.z;
  const int m0 = m_block * C::BLOCK_M;
  const attention_mask<C::CAUSAL> mask = attention_mask<C::CAUSAL>::of(p);
  const head_inputs in = inputs_of(p, batch, head);
  const elem_bits *q = in.q, *k = in.k, *v = in.v;
  // The block's K/V tiles, [range.first, range.end) of the mask: the loop counts j from 0, over
  // tile first + j (the LDS ring's stages by j); [0, n_plain) of them need no mask.
  const kv_tile_range range = mask.template range<C::BLOCK_M, C::BLOCK_N>(m0);
  const int first = range.first, n_blocks = range.count();
  const int n_plain = mask.template full_tiles<C::BLOCK_N>(m0, range).full_end - first;

  floatx4 acc[C::MI][C::D / 16];
  float row_max[C::MI], row_sum[C::MI];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int db = 0; db < C::D / 16; ++db) acc[mi][db] = floatx4{0.f, 0.f, 0.f, 0.f};
    row_max[mi] = neg_inf();
    row_sum[mi] = 0.f;
  }

  mfma_load_tile<C>(q_lds, q, p.q_row_stride, m0, p.q_len, C::BLOCK_M);
  auto load_kv = [&](int j, int stage) {
    mfma_load_tile<C>(k_stage(stage), k, p.kv_row_stride, (first + j) * C::BLOCK_N, p.kv_len, C::BLOCK_N);
    mfma_load_tile<C>(v_stage(stage), v, p.kv_row_stride, (first + j) * C::BLOCK_N, p.kv_len, C::BLOCK_N);
  };
  auto attend = [&](int j, int stage) {
    if (j >= n_plain)
      mfma_attend_tile<C, true>(q_lds, k_stage(stage), v_stage(stage), acc, row_max, row_sum,
                                (first + j) * C::BLOCK_N, m0, mask.rows(), p.scale_log2);
    else
      mfma_attend_tile<C, false>(q_lds, k_stage(stage), v_stage(stage), acc, row_max, row_sum,
                                 (first + j) * C::BLOCK_N, m0, mask.rows(), p.scale_log2);
  };
  // LDS ring without asynchronous copies: tile j + STAGES - 1 is loaded into the stage tile j - 1
  // used, right after the barrier that proves every wavefront is done with it.
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (s < n_blocks) load_kv(s, s);
  for (int j = 0; j < n_blocks; ++j) {
    __syncthreads();
    const int next = j + C::STAGES - 1;
    if (next < n_blocks) load_kv(next, next % C::STAGES);
    if (C::STAGES == 1) __syncthreads();  // the tile just loaded is the one used now
    attend(j, j % C::STAGES);
  }

  const int lane = threadIdx.x % 64, wave = threadIdx.x / 64, r16 = lane % 16, g4 = lane / 16;
  elem_bits* o = static_cast<elem_bits*>(p.o) + batch * p.q_batch_stride + head * p.q_head_stride;
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
    float sum = row_sum[mi];
    sum += __shfl_xor(sum, 16);
    sum += __shfl_xor(sum, 32);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int row = m0 + wave * C::WAVE_M + mi * 16 + r16;
    if (row >= p.q_len) continue;
#pragma unroll
    for (int db = 0; db < C::D / 16; ++db) {
      shortx4 out;
#pragma unroll
      for (int e = 0; e < 4; ++e) out[e] = static_cast<short>(from_float<C::BF16>(acc[mi][db][e] * inv));
      *reinterpret_cast<shortx4*>(o + row * p.q_row_stride + db * 16 + 4 * g4) = out;
    }
    if (g4 == 0)
      p.lse[((long long)batch * p.heads + head) * p.q_len + row] =
          row_lse(row_max[mi], sum, p.scale_log2);
  }
}

}  // namespace attn_k
