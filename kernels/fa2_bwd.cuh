#pragma once
// fa2_bwd: attention's backward pass (dQ, dK, dV) on mma.sync (sm_80+), FlashAttention-2's
// algorithm in three kernels that recompute P from Q, K and the forward's LSE:
//
//  1. bwd_delta: delta_i = sum_d dO_id O_id for each query row (fp32), the softmax gradient's
//     row term: dS_ij = P_ij (dP_ij - delta_i).
//  2. bwd_dkdv: one block per BLOCK_N keys of one (batch, K/V head). Each warp owns WARP_N of the
//     keys and keeps their dK and dV in registers while the block walks every query tile of every
//     query head of the K/V head's group (GQA's sum over heads stays in registers). Per query tile:
//     S^T = K Q^T, P^T = exp(S^T scale - LSE), dV += P^T dO, dP^T = V dO^T,
//     dS^T = P^T (dP^T - delta), dK += dS^T Q.
//  3. bwd_dq: one block per BLOCK_M query rows of one (batch, head), the forward's shape. Per K/V
//     tile: S = Q K^T, P, dP = dO V^T, dS = P (dP - delta), dQ += dS K.
//
// dQ has its own pass instead of fp32 atomics from bwd_dkdv: seven products instead of five, but
// no atomics and no fp32 dQ buffer, and reruns are bit-identical (deterministic by construction).
// dQ and dK carry the softmax scale (S = scale Q K^T), applied once when they are written.
//
// The fragment layouts are the forward's (fa2.cuh): an accumulator of two adjacent 8-column tiles is
// an A fragment of a 16-wide k step; an operand whose k index runs along shared-memory rows (V in
// the forward; dO, Q and K here) comes through ldmatrix .trans. Shared rows are padded by 8
// elements, so ldmatrix and cp.async are free of bank conflicts.
//
// Masks: causal is bottom-right aligned (key n is hidden from query i when n > i + kv_len - q_len);
// query rows past q_len and rows that see no key (LSE -inf) get P = 0 through an LSE of +inf;
// keys past kv_len are zero rows of K and V, hidden from dQ by the mask and never written to dK, dV.
// Softcap (SOFTCAP): P is recomputed from the capped score, and dS carries the cap's derivative
// 1 - tanh^2 (bwd_score); the dK/dV kernel packs P^T (1 - tanh^2) beside P^T for dS.
// Head dims: multiples of 8 up to 256 (the loops run over D rounded up to 16, the extra columns zero);
// above 128 dK and dV are computed by two launches of the dK/dV kernel (bwd_config's PART).
#include "common/bwd_params.cuh"
#include "common/device.cuh"
#include "common/hopper_ptx.cuh"
#include "common/resources.cuh"
#include "common/window.cuh"

namespace attn_k {

/// PART (the dK/dV kernel): 0 computes dK and dV; 1 dV only and 2 dK only, two launches that each
/// recompute P^T, for head dims whose dK and dV together do not fit a warp's registers (D > 128:
/// one product more, 8 instead of 7).
/// The columns of a tile: D elements a row, DK (D rounded up to the mma's 16) computed, rows PITCH
/// elements apart in shared memory (padded by 8).
template <int D_>
struct bwd_cols {
  static constexpr int D = D_, DK = mma_head_dim(D_), PITCH = DK + 8;
};

/// WINDOW: the problem has a sliding window (bwd_params' sides); without it the masks compile to
/// causal's alone. SOFTCAP: the scores are capped (bwd_params' softcap_in, softcap_out; see bwd_score).
/// DV_: V's head dim where it is not D (0: D): V, dV, O and dO have rows of DV elements (the VO
/// columns), Q, dQ, K and dK rows of D (QK). VARLEN: a packed variable-length batch (bwd_params'
/// cu_seqlens_*; each block works on its own sequence: sequence_params).
template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_, int PART_ = 0,
          bool WINDOW_ = false, bool SOFTCAP_ = false, int DV_ = 0, bool VARLEN_ = false>
struct bwd_config {
  static constexpr bool BF16 = BF16_, CAUSAL = CAUSAL_, WINDOW = WINDOW_, SOFTCAP = SOFTCAP_, VARLEN = VARLEN_;
  static constexpr int PART = PART_;
  static constexpr bool DO_DV = PART != 2, DO_DK = PART != 1;
  static_assert(PART >= 0 && PART <= 2, "PART: 0 both, 1 dV, 2 dK");
  static constexpr int D = D_, DK = mma_head_dim(D_), BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
  static constexpr int WARPS = WARPS_, STAGES = STAGES_, THREADS = WARPS * 32;
  static constexpr int PITCH = DK + 8;  ///< shared row pitch, elements
  static constexpr int DV = DV_ > 0 ? DV_ : D_, DVK = mma_head_dim(DV), V_PITCH = DVK + 8;
  /// V's own head dim: O, dO, V and dV at bwd_params' o_* and v_* strides; else at q_* and kv_*
  /// (equal to them then), so the code of D = DV is that of one set of strides.
  static constexpr bool OWN_DV = DV_ > 0;
  using QK = bwd_cols<D_>;
  using VO = bwd_cols<DV>;
  static_assert(D % 8 == 0 && D >= 16 && D <= 256, "head dim: a multiple of 8 in [16, 256]");
  static_assert(DV % 8 == 0 && DV >= 16 && DV <= 256, "V's head dim: a multiple of 8 in [16, 256]");
  static_assert(BLOCK_M % 16 == 0 && BLOCK_N % 16 == 0, "tiles of whole 16-row mma tiles");
  static_assert(STAGES >= 1 && STAGES <= 4, "STAGES in [1, 4]");
};

/// Copies `rows` rows of T::D elements (T: the tile's columns, C::QK or C::VO) from global row `row0`
/// (stride row_stride) into a padded shared tile with 16-byte cp.async, zero-filling rows at or past
/// row_end and the columns [D, DK).
template <class C, class T = typename C::QK>
__device__ __forceinline__ void bwd_load_rows(unsigned smem, const elem_bits* base, long long row_stride, int row0,
                                              int row_end, int rows) {
  constexpr int CHUNKS = T::DK / 8;
  for (int c = threadIdx.x; c < rows * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    const bool valid = row0 + r < row_end && (T::D == T::DK || col < T::D);
    cp_async_16(smem + (r * T::PITCH + col) * 2, base + (valid ? (row0 + r) * row_stride + col : 0), valid);
  }
}

/// A row's LSE in log2 units for P = exp2(s scale_log2 - lse2): +inf (P = 0) for a row past the
/// queries or one that sees no key.
__device__ __forceinline__ float lse_log2(const float* lse, int i, int q_len) {
  const float l = i < q_len ? lse[i] : neg_inf();
  return l == neg_inf() ? __int_as_float(0x7f800000) : l * 1.4426950408889634f;
}

/// P of a raw score x (q.k, unscaled) of a row whose LSE in log2 units is lse2, and (SOFTCAP) into
/// dtanh the cap's derivative 1 - tanh^2: with softcap the score is softcap_out tanh(x softcap_in)
/// (the forward's), and dS = P (dP - delta) (1 - tanh^2), the gradient of the scaled q.k.
template <bool SOFTCAP>
__device__ __forceinline__ float bwd_score(const bwd_params& p, float x, float lse2, float& dtanh) {
  if constexpr (SOFTCAP) {
    const float t = fast_tanh(x * p.softcap_in);
    dtanh = 1.f - t * t;
    x = t * p.softcap_out;
  }
  return exp2f(x * p.scale_log2 - lse2);
}

/// Pack two adjacent 8-column accumulator tiles per 16-wide k step into A fragments (the forward's
/// P -> A conversion), for NF columns.
template <bool BF16, int ROWS, int NF>
__device__ __forceinline__ void pack_a(unsigned (&a)[ROWS][NF / 2][4], const float (&x)[ROWS][NF][4]) {
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int kk = 0; kk < NF / 2; ++kk) {
      a[r][kk][0] = pack2<BF16>(x[r][2 * kk][0], x[r][2 * kk][1]);
      a[r][kk][1] = pack2<BF16>(x[r][2 * kk][2], x[r][2 * kk][3]);
      a[r][kk][2] = pack2<BF16>(x[r][2 * kk + 1][0], x[r][2 * kk + 1][1]);
      a[r][kk][3] = pack2<BF16>(x[r][2 * kk + 1][2], x[r][2 * kk + 1][3]);
    }
}

/// The element of packed A fragments (pack_a's) that holds accumulator element x[r][nf][e], as float.
template <bool BF16, int ROWS, int KK>
__device__ __forceinline__ float unpacked(const unsigned (&a)[ROWS][KK][4], int r, int nf, int e) {
  const unsigned w = a[r][nf / 2][(nf % 2) * 2 + e / 2];
  const elem_bits half = static_cast<elem_bits>(e % 2 ? w >> 16 : w & 0xffffu);
  return to_float<BF16>(half);
}

/// acc[r][2 nj + h] += A[r] (rows a_row0 + 16 r of a_smem) times the transposed rows of b_smem
/// (nj: 16 columns of each row), over K_STEPS 16-wide steps: C = A B^T with both from shared rows
/// PITCH elements apart.
template <class C, int ROWS, int NJ, int K_STEPS, int PITCH = C::PITCH>
__device__ __forceinline__ void mma_rows_rows(float (&acc)[ROWS][2 * NJ][4], unsigned a_smem, int a_row0, unsigned b_smem) {
  const int lane = threadIdx.x % 32;
  const int a_row = a_row0 + (lane % 8) + ((lane / 8) % 2) * 8, a_col = (lane / 16) * 8;
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;
#pragma unroll
  for (int kk = 0; kk < K_STEPS; ++kk) {
    unsigned a[ROWS][4];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) ldmatrix_x4(a[r], a_smem + ((a_row + r * 16) * PITCH + kk * 16 + a_col) * 2);
#pragma unroll
    for (int nj = 0; nj < NJ; ++nj) {
      unsigned b[4];
      ldmatrix_x4(b, b_smem + ((nj * 16 + b_row) * PITCH + kk * 16 + b_col) * 2);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        mma_16816<C::BF16>(acc[r][2 * nj], a[r], b[0], b[1]);
        mma_16816<C::BF16>(acc[r][2 * nj + 1], a[r], b[2], b[3]);
      }
    }
  }
}

/// acc[r][2 dj + h] += a[r][kk] (register A fragments over K_STEPS 16-wide k steps) times the
/// shared rows kk*16.. of b_smem (k along rows, T::DK columns: ldmatrix .trans), the forward's P V.
template <class C, int ROWS, int K_STEPS, class T = typename C::QK>
__device__ __forceinline__ void mma_regs_rows(float (&acc)[ROWS][T::DK / 8][4], const unsigned (&a)[ROWS][K_STEPS][4],
                                              unsigned b_smem) {
  const int lane = threadIdx.x % 32;
  const int row = (lane % 8) + ((lane / 8) % 2) * 8, col = (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < K_STEPS; ++kk)
#pragma unroll
    for (int dj = 0; dj < T::DK / 16; ++dj) {
      unsigned b[4];
      ldmatrix_x4_trans(b, b_smem + ((kk * 16 + row) * T::PITCH + dj * 16 + col) * 2);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        mma_16816<C::BF16>(acc[r][2 * dj], a[r][kk], b[0], b[1]);
        mma_16816<C::BF16>(acc[r][2 * dj + 1], a[r][kk], b[2], b[3]);
      }
    }
}

template <int ROWS, int NF>
__device__ __forceinline__ void zero(float (&x)[ROWS][NF][4]) {
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int f = 0; f < NF; ++f)
#pragma unroll
      for (int e = 0; e < 4; ++e) x[r][f][e] = 0.f;
}

/// Writes accumulator rows (row0 + 16 r + g (+8)) of a [rows][T::DK] fp32 tile times `scale` to global
/// rows of T::D elements (stride row_stride), rows at or past row_end left alone.
template <class C, int ROWS, class T = typename C::QK>
__device__ __forceinline__ void store_rows(elem_bits* base, long long row_stride, int row0, int row_end,
                                           const float (&acc)[ROWS][T::DK / 8][4], float scale) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + r * 16 + g + h * 8;
      if (row >= row_end) continue;
      elem_bits* out = base + row * row_stride;
#pragma unroll
      for (int df = 0; df < T::D / 8; ++df)
        *reinterpret_cast<unsigned*>(out + df * 8 + t * 2) =
            pack2<C::BF16>(acc[r][df][h * 2] * scale, acc[r][df][h * 2 + 1] * scale);
    }
}

/// The K/V ring of a backward kernel (both families): `count` steps, step it's tiles landing in
/// stage it % STAGES, loaded STAGES - 1 steps ahead. load(it) issues step it's copies; step(it, s)
/// runs step it on stage s. Every step commits one group (maybe empty), so "step it has landed" is
/// "at most STAGES - 1 groups pending" once step it + STAGES - 1's copies are issued. ASYNC_PROXY:
/// the tensor cores (wgmma) read the tiles, so the copies are fenced into the async proxy.
template <int STAGES, bool ASYNC_PROXY, class Load, class Step>
__device__ __forceinline__ void bwd_ring(int count, Load&& load, Step&& step) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < count) load(s);
    cp_async_commit();
  }
  for (int it = 0; it < count; ++it) {
    if (it + STAGES - 1 < count) load(it + STAGES - 1);
    cp_async_commit();
    cp_async_wait<STAGES - 1>();
    if constexpr (ASYNC_PROXY) fence_proxy_async();
    __syncthreads();
    step(it, it % STAGES);
    __syncthreads();  // every warp is done with the stage before it is loaded again
  }
  cp_async_commit();  // copies issued before the ring (none of its steps may have committed them)
  cp_async_wait<0>();
}

/// The dK/dV kernel's steps for the keys from n0 of K/V head kv_head: every query tile of BLOCK_M
/// rows that sees any of them (causal: from the first row whose diagonal reaches n0) of every query
/// head of the group, head by head.
template <int BLOCK_M, bool CAUSAL>
struct dkdv_steps {
  int m_start, per_head, count, first_head;
  __device__ __forceinline__ dkdv_steps(const bwd_params& p, int kv_head, int n0) {
    const int m_blocks = (p.q_len + BLOCK_M - 1) / BLOCK_M;
    m_start = CAUSAL ? min(m_blocks, max(0, n0 - (p.kv_len - p.q_len)) / BLOCK_M) : 0;
    per_head = m_blocks - m_start;
    count = per_head * p.group;
    first_head = kv_head * p.group;
  }
  __device__ __forceinline__ int head(int it) const { return first_head + it / per_head; }
  __device__ __forceinline__ int m0(int it) const { return (m_start + it % per_head) * BLOCK_M; }
};

/// The LSE's and delta's row of query 0 of (batch, head): [B, H, Nq], or (VARLEN, sequence_params'
/// pointers already at the sequence's first row) [H, total_q].
template <bool VARLEN>
__device__ __forceinline__ long long lse_row0(const bwd_params& p, int batch, int head) {
  return VARLEN ? (long long)head * p.total_q : ((long long)batch * p.heads + head) * p.q_len;
}

/// A packed batch's sequence `batch` as a problem of its own: its lengths, and its inputs, the LSE
/// and delta from its first row (the batch strides are 0, so the kernels' batch offsets stay 0).
/// The outputs (dQ, dK, dV) are not moved: the kernels add the first rows (seq_rows) when they store,
/// so no moved pointer stays live through their loops. OWN_DV: O and V at their own strides (else at
/// Q's and K's, as the kernels read them then).
template <bool OWN_DV>
__device__ __forceinline__ bwd_params sequence_params(const bwd_params& p, int batch) {
  bwd_params s = p;
  const int q0 = p.cu_seqlens_q[batch], k0 = p.cu_seqlens_k[batch];
  s.q_len = p.cu_seqlens_q[batch + 1] - q0, s.kv_len = p.cu_seqlens_k[batch + 1] - k0;
  auto at = [](const void* t, long long offset) { return static_cast<const elem_bits*>(t) + offset; };
  const long long o_row = OWN_DV ? p.o_row_stride : p.q_row_stride, v_row = OWN_DV ? p.v_row_stride : p.kv_row_stride;
  s.q = at(p.q, q0 * p.q_row_stride), s.o = at(p.o, q0 * o_row), s.d_o = at(p.d_o, q0 * o_row);
  s.k = at(p.k, k0 * p.kv_row_stride), s.v = at(p.v, k0 * v_row);
  s.lse = p.lse + q0, s.delta = p.delta + q0;
  return s;
}
/// Runs a kernel's blocks (blocks(params)) on the whole problem, or (VARLEN) on this block's sequence.
template <bool VARLEN, bool OWN_DV, class Blocks>
__device__ __forceinline__ void per_sequence(const bwd_params& p, Blocks&& blocks) {
  if constexpr (VARLEN)
    blocks(sequence_params<OWN_DV>(p, blockIdx.z));
  else
    blocks(p);
}
/// VARLEN: the first rows of a block's sequence in the packed outputs, read again when they are
/// stored; 0 otherwise.
struct seq_rows {
  int q0 = 0, k0 = 0;
  __device__ __forceinline__ static seq_rows of(const bwd_params& p, int batch) {
    return {p.cu_seqlens_q[batch], p.cu_seqlens_k[batch]};
  }
};

/// A dK/dV step's row terms in shared memory: rows [m0, m0 + ROWS) of (batch, head)'s LSE (log2
/// units, +inf where P is 0: lse_log2) and delta (0 past the queries), by THREADS threads: the
/// block's (first < 0), or THREADS of them of which this is thread `first`.
template <int ROWS, int THREADS, bool VARLEN = false>
__device__ __forceinline__ void load_row_terms(const bwd_params& p, int batch, int head, int m0, float* lse2,
                                               float* delta, int first = -1) {
  const long long row0 = lse_row0<VARLEN>(p, batch, head);
  for (int r = first < 0 ? static_cast<int>(threadIdx.x) : first; r < ROWS; r += THREADS) {
    lse2[r] = lse_log2(p.lse + row0, m0 + r, p.q_len);
    delta[r] = m0 + r < p.q_len ? p.delta[row0 + m0 + r] : 0.f;
  }
}

/// The dQ kernel's K/V tiles of BLOCK_N keys for query rows [m0, m0 + BLOCK_M): up to the last
/// row's diagonal when causal.
template <int BLOCK_M, int BLOCK_N, bool CAUSAL>
__device__ __forceinline__ int dq_key_tiles(const bwd_params& p, int m0) {
  const int last_row = min(m0 + BLOCK_M, p.q_len) - 1;
  const int key_end = CAUSAL ? max(0, min(p.kv_len, last_row + p.kv_len - p.q_len + 1)) : p.kv_len;
  return (key_end + BLOCK_N - 1) / BLOCK_N;
}

/// Whether key `key` is hidden from the query whose diagonal (i + kv_len - q_len) is `diagonal`: past
/// it when causal, or outside the window's sides (WINDOW: the problem has one).
template <bool CAUSAL, bool WINDOW>
__device__ __forceinline__ bool hidden(const bwd_params& p, int diagonal, int key) {
  return (CAUSAL && key > diagonal) || (WINDOW && (key < window_key_begin(diagonal, 0, p.window_left) ||
                                                   key >= window_key_end(diagonal, 0, p.window_right, p.kv_len)));
}
/// Whether a problem's window masks every tile: a left side, or a right one without causal (a
/// causal problem's right side is 0, the diagonal); never without WINDOW.
template <bool CAUSAL, bool WINDOW>
__device__ __forceinline__ bool windowed(const bwd_params& p) {
  return WINDOW && (p.window_left >= 0 || (!CAUSAL && p.window_right >= 0));
}

/// The row of [B, H, Nq] of this thread's warp in a kernel of a warp a row: its index (row) and its
/// element offsets in Q and dQ (at) and in O and dO (o_at); false past the last row.
/// VARLEN: the rows of [H, total_q].
struct warp_row {
  long long row, at, o_at;
  template <bool VARLEN = false>
  __device__ __forceinline__ bool find(const bwd_params& p) {
    row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if constexpr (VARLEN) {
      if (row >= (long long)p.heads * p.total_q) return false;
      const long long t = row % p.total_q;
      const int h = row / p.total_q;
      at = h * p.q_head_stride + t * p.q_row_stride;
      o_at = h * p.o_head_stride + t * p.o_row_stride;
      return true;
    }
    if (row >= (long long)p.batch * p.heads * p.q_len) return false;
    const int i = row % p.q_len;
    const long long bh = row / p.q_len;
    const int h = bh % p.heads, b = bh / p.heads;
    at = b * p.q_batch_stride + h * p.q_head_stride + i * p.q_row_stride;
    o_at = b * p.o_batch_stride + h * p.o_head_stride + i * p.o_row_stride;
    return true;
  }
};

/// delta = rowsum(dO * O) over O's DV columns (D when 0): one warp a row of [B, H, Nq] (VARLEN:
/// [H, total_q]). ZERO_DQ: also zeroes the row of p.dq_accum (D columns: the atomic-dQ variants'
/// sum, kernels/wgmma_bwd.cuh).
template <bool BF16, int D, bool ZERO_DQ = false, int DV_ = 0, bool VARLEN = false>
__device__ void bwd_delta(const bwd_params& p) {
  constexpr int DV = DV_ > 0 ? DV_ : D;
  warp_row w{};
  if (!w.find<VARLEN>(p)) return;
  const long long row = w.row, at = DV_ > 0 ? w.o_at : w.at;  // O's strides are Q's when DV = D
  const int lane = threadIdx.x % 32;
  const elem_bits* o = static_cast<const elem_bits*>(p.o) + at;
  const elem_bits* d_o = static_cast<const elem_bits*>(p.d_o) + at;
  float x = 0.f;
  for (int c = lane * 2; c < DV; c += 64)
    x += to_float<BF16>(o[c]) * to_float<BF16>(d_o[c]) + to_float<BF16>(o[c + 1]) * to_float<BF16>(d_o[c + 1]);
#pragma unroll
  for (int m = 16; m > 0; m /= 2) x += __shfl_xor_sync(0xffffffffu, x, m);
  if (lane == 0) p.delta[row] = x;
  if constexpr (ZERO_DQ)
    for (int c = lane * 4; c < D; c += 128) *reinterpret_cast<float4*>(p.dq_accum + row * D + c) = float4{0.f, 0.f, 0.f, 0.f};
}

template <class C>
__device__ __forceinline__ void bwd_dkdv_blocks(const bwd_params& p) {
  constexpr int WARP_N = C::BLOCK_N / C::WARPS, NI = WARP_N / 16, MF = C::BLOCK_M / 8;
  static_assert(WARP_N % 16 == 0 && WARP_N >= 16, "each warp needs whole 16-key mma tiles");
  constexpr int TILE = C::BLOCK_M * C::PITCH * 2, DO_TILE = C::BLOCK_M * C::V_PITCH * 2;  // bytes of a Q, a dO tile
  using VO = typename C::VO;
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const unsigned k_smem = smem_addr(shared_raw), v_smem = k_smem + C::BLOCK_N * C::PITCH * 2;
  const unsigned stage0 = v_smem + C::BLOCK_N * C::V_PITCH * 2;
  auto q_stage = [&](int s) { return stage0 + s * (TILE + DO_TILE); };
  auto do_stage = [&](int s) { return stage0 + s * (TILE + DO_TILE) + TILE; };
  float* row_terms = reinterpret_cast<float*>(
      shared_raw + (C::BLOCK_N * (C::PITCH + C::V_PITCH) * 2 + C::STAGES * (TILE + DO_TILE)));
  auto lse_stage = [&](int s) { return row_terms + 2 * s * C::BLOCK_M; };
  auto delta_stage = [&](int s) { return row_terms + (2 * s + 1) * C::BLOCK_M; };

  const int n_block = blockIdx.x, kv_head = blockIdx.y, batch = blockIdx.z;
  const int n0 = n_block * C::BLOCK_N, offset = p.kv_len - p.q_len;
  if (C::VARLEN && n0 >= p.kv_len) return;  // past the sequence's keys (the grid spans the longest)
  const bool windowed = attn_k::windowed<C::CAUSAL, C::WINDOW>(p);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const long long kv_at = batch * p.kv_batch_stride + kv_head * p.kv_head_stride;
  const long long v_at = C::OWN_DV ? batch * p.v_batch_stride + kv_head * p.v_head_stride : kv_at;
  const long long v_row = C::OWN_DV ? p.v_row_stride : p.kv_row_stride, o_row = C::OWN_DV ? p.o_row_stride : p.q_row_stride;
  bwd_load_rows<C>(k_smem, static_cast<const elem_bits*>(p.k) + kv_at, p.kv_row_stride, n0, p.kv_len, C::BLOCK_N);
  bwd_load_rows<C, VO>(v_smem, static_cast<const elem_bits*>(p.v) + v_at, v_row, n0, p.kv_len, C::BLOCK_N);

  const dkdv_steps<C::BLOCK_M, C::CAUSAL> steps(p, kv_head, n0);
  auto load = [&](int it) {
    const int head = steps.head(it), m0 = steps.m0(it), s = it % C::STAGES;
    const long long q_at = batch * p.q_batch_stride + head * p.q_head_stride;
    const long long o_at = C::OWN_DV ? batch * p.o_batch_stride + head * p.o_head_stride : q_at;
    bwd_load_rows<C>(q_stage(s), static_cast<const elem_bits*>(p.q) + q_at, p.q_row_stride, m0, p.q_len, C::BLOCK_M);
    bwd_load_rows<C, VO>(do_stage(s), static_cast<const elem_bits*>(p.d_o) + o_at, o_row, m0, p.q_len, C::BLOCK_M);
    load_row_terms<C::BLOCK_M, C::THREADS, C::VARLEN>(p, batch, head, m0, lse_stage(s), delta_stage(s));
  };

  float dk[NI][C::DK / 8][4], dv[NI][C::DVK / 8][4];
  zero(dk);
  zero(dv);
  bwd_ring<C::STAGES, false>(steps.count, load, [&](int it, int s) {
    const int m0 = steps.m0(it);
    const float* lse2 = lse_stage(s);
    const float* delta = delta_stage(s);

    float st[NI][MF][4];  // S^T, then P^T: this warp's keys by the tile's queries
    zero(st);
    mma_rows_rows<C, NI, MF / 2, C::DK / 16>(st, k_smem, warp * WARP_N, q_stage(s));
    // A window masks every tile (its sides cut tiles anywhere); else causal masks those the diagonal crosses.
    const bool masked = windowed || (C::CAUSAL && m0 + offset < n0 + C::BLOCK_N - 1);
    // SOFTCAP: dS's factor is P^T (1 - tanh^2), packed apart from dV's P^T (pf; one element otherwise).
    constexpr int SF = C::SOFTCAP ? NI : 1, SM = C::SOFTCAP ? MF : 2;
    float pf[SF][SM][4];
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int nf = 0; nf < MF; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = nf * 8 + t * 2 + e % 2, key = n0 + warp * WARP_N + ni * 16 + g + (e / 2) * 8;
          float dtanh = 1.f;
          float x = bwd_score<C::SOFTCAP>(p, st[ni][nf][e], lse2[col], dtanh);
          if (masked && hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset, key)) x = 0.f;
          st[ni][nf][e] = x;
          if constexpr (C::SOFTCAP) pf[ni][nf][e] = x * dtanh;
        }
    // P^T in the element type: dV's operand, and (widened again) dS's factor, so the fp32 scores
    // die here and dP^T takes their registers (what a framework's backward does in bf16 too).
    unsigned pa[NI][MF / 2][4], pd[SF][SM / 2][4];
    pack_a<C::BF16>(pa, st);
    if constexpr (C::SOFTCAP) pack_a<C::BF16>(pd, pf);
    if constexpr (C::DO_DV) mma_regs_rows<C, NI, MF / 2, VO>(dv, pa, do_stage(s));  // dV += P^T dO
    if constexpr (!C::DO_DK) return;

    float dpt[NI][MF][4];  // dP^T = V dO^T
    zero(dpt);
    mma_rows_rows<C, NI, MF / 2, C::DVK / 16, C::V_PITCH>(dpt, v_smem, warp * WARP_N, do_stage(s));
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int nf = 0; nf < MF; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          dpt[ni][nf][e] = (C::SOFTCAP ? unpacked<C::BF16>(pd, ni, nf, e) : unpacked<C::BF16>(pa, ni, nf, e)) *
                           (dpt[ni][nf][e] - delta[nf * 8 + t * 2 + e % 2]);
    pack_a<C::BF16>(pa, dpt);
    mma_regs_rows<C, NI, MF / 2>(dk, pa, q_stage(s));  // dK += dS^T Q
  });

  // The offsets again, not kept in registers through the loop.
  const seq_rows first = C::VARLEN ? seq_rows::of(p, batch) : seq_rows{};
  const long long out_at = batch * p.kv_batch_stride + kv_head * p.kv_head_stride + (long long)first.k0 * p.kv_row_stride;
  const long long v_out_at = C::OWN_DV ? batch * p.v_batch_stride + kv_head * p.v_head_stride + (long long)first.k0 * p.v_row_stride
                                       : out_at;
  const int row0 = n0 + warp * WARP_N;
  if constexpr (C::DO_DK)
    store_rows<C, NI>(static_cast<elem_bits*>(p.dk) + out_at, p.kv_row_stride, row0, p.kv_len, dk, p.softmax_scale);
  if constexpr (C::DO_DV)
    store_rows<C, NI, VO>(static_cast<elem_bits*>(p.dv) + v_out_at, C::OWN_DV ? p.v_row_stride : p.kv_row_stride,
                          row0, p.kv_len, dv, 1.f);
}

/// The dK/dV kernel: a block per BLOCK_N keys of a (batch, K/V head); VARLEN, of its own sequence.
template <class C>
__device__ void bwd_dkdv(const bwd_params& p) {
  per_sequence<C::VARLEN, C::OWN_DV>(p, [](const bwd_params& s) { bwd_dkdv_blocks<C>(s); });
}

template <class C>
__device__ __forceinline__ void bwd_dq_blocks(const bwd_params& p) {
  constexpr int WARP_M = C::BLOCK_M / C::WARPS, MI = WARP_M / 16, NF = C::BLOCK_N / 8;
  static_assert(WARP_M % 16 == 0 && WARP_M >= 16, "each warp needs whole 16-row mma tiles");
  constexpr int Q_TILE = C::BLOCK_M * C::PITCH * 2, KV_TILE = C::BLOCK_N * C::PITCH * 2;
  constexpr int DO_TILE = C::BLOCK_M * C::V_PITCH * 2, V_TILE = C::BLOCK_N * C::V_PITCH * 2;
  using VO = typename C::VO;
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const unsigned q_smem = smem_addr(shared_raw), do_smem = q_smem + Q_TILE, stage0 = do_smem + DO_TILE;
  auto k_stage = [&](int s) { return stage0 + s * (KV_TILE + V_TILE); };
  auto v_stage = [&](int s) { return stage0 + s * (KV_TILE + V_TILE) + KV_TILE; };

  const int m_block = C::CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // the longest rows first
  const int head = blockIdx.y, batch = blockIdx.z, m0 = m_block * C::BLOCK_M, offset = p.kv_len - p.q_len;
  if (C::VARLEN && m0 >= p.q_len) return;  // past the sequence's queries (the grid spans the longest)
  const bool windowed = attn_k::windowed<C::CAUSAL, C::WINDOW>(p);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const long long q_at = batch * p.q_batch_stride + head * p.q_head_stride;
  const long long o_at = C::OWN_DV ? batch * p.o_batch_stride + head * p.o_head_stride : q_at;
  const long long kv_at = batch * p.kv_batch_stride + (head / p.group) * p.kv_head_stride;
  const long long v_at = C::OWN_DV ? batch * p.v_batch_stride + (head / p.group) * p.v_head_stride : kv_at;
  const long long v_row = C::OWN_DV ? p.v_row_stride : p.kv_row_stride, o_row = C::OWN_DV ? p.o_row_stride : p.q_row_stride;
  bwd_load_rows<C>(q_smem, static_cast<const elem_bits*>(p.q) + q_at, p.q_row_stride, m0, p.q_len, C::BLOCK_M);
  bwd_load_rows<C, VO>(do_smem, static_cast<const elem_bits*>(p.d_o) + o_at, o_row, m0, p.q_len, C::BLOCK_M);
  cp_async_commit();

  // This thread's rows (two per 16-row tile): their LSE (log2 units) and delta.
  const long long row0 = lse_row0<C::VARLEN>(p, batch, head);
  float lse2[MI][2], delta[MI][2];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = m0 + warp * WARP_M + mi * 16 + g + h * 8;
      lse2[mi][h] = lse_log2(p.lse + row0, i, p.q_len);
      delta[mi][h] = i < p.q_len ? p.delta[row0 + i] : 0.f;
    }

  const elem_bits* k = static_cast<const elem_bits*>(p.k) + kv_at;
  const elem_bits* v = static_cast<const elem_bits*>(p.v) + v_at;
  auto load = [&](int j) {
    bwd_load_rows<C>(k_stage(j % C::STAGES), k, p.kv_row_stride, j * C::BLOCK_N, p.kv_len, C::BLOCK_N);
    bwd_load_rows<C, VO>(v_stage(j % C::STAGES), v, v_row, j * C::BLOCK_N, p.kv_len, C::BLOCK_N);
  };

  float dq[MI][C::DK / 8][4];
  zero(dq);
  bwd_ring<C::STAGES, false>(dq_key_tiles<C::BLOCK_M, C::BLOCK_N, C::CAUSAL>(p, m0), load, [&](int j, int s) {
    const int n0 = j * C::BLOCK_N;
    float sc[MI][NF][4];  // S, then P
    zero(sc);
    mma_rows_rows<C, MI, NF / 2, C::DK / 16>(sc, q_smem, warp * WARP_M, k_stage(s));
    // A tile every row sees whole needs no mask: before the keys' end and, causal, the first row's diagonal.
    const bool masked = windowed || n0 + C::BLOCK_N > p.kv_len || (C::CAUSAL && n0 + C::BLOCK_N - 1 > m0 + offset);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int nf = 0; nf < NF; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = m0 + warp * WARP_M + mi * 16 + g + (e / 2) * 8, n = n0 + nf * 8 + t * 2 + e % 2;
          float dtanh = 1.f;
          float x = bwd_score<C::SOFTCAP>(p, sc[mi][nf][e], lse2[mi][e / 2], dtanh);
          if (masked && (n >= p.kv_len || hidden<C::CAUSAL, C::WINDOW>(p, i + offset, n))) x = 0.f;
          sc[mi][nf][e] = C::SOFTCAP ? x * dtanh : x;  // only dS reads it: P (1 - tanh^2) with softcap
        }
    float dp[MI][NF][4];  // dP = dO V^T, then dS
    zero(dp);
    mma_rows_rows<C, MI, NF / 2, C::DVK / 16, C::V_PITCH>(dp, do_smem, warp * WARP_M, v_stage(s));
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int nf = 0; nf < NF; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e) dp[mi][nf][e] = sc[mi][nf][e] * (dp[mi][nf][e] - delta[mi][e / 2]);
    unsigned ds[MI][NF / 2][4];
    pack_a<C::BF16>(ds, dp);
    mma_regs_rows<C, MI, NF / 2>(dq, ds, k_stage(s));  // dQ += dS K
  });
  const seq_rows first = C::VARLEN ? seq_rows::of(p, batch) : seq_rows{};
  store_rows<C, MI>(static_cast<elem_bits*>(p.dq) + q_at + (long long)first.q0 * p.q_row_stride, p.q_row_stride,
                    m0 + warp * WARP_M, p.q_len, dq, p.softmax_scale);
}

/// The dQ kernel: a block per BLOCK_M query rows of a (batch, head); VARLEN, of its own sequence.
template <class C>
__device__ void bwd_dq(const bwd_params& p) {
  per_sequence<C::VARLEN, C::OWN_DV>(p, [](const bwd_params& s) { bwd_dq_blocks<C>(s); });
}

}  // namespace attn_k
