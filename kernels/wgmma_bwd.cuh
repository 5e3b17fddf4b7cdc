#pragma once
// wgmma_bwd: attention's backward pass on Hopper's warpgroup MMA (sm_90a only), fa2_bwd.cuh's three
// kernels with each product a wgmma: bwd_delta is fa2_bwd's; wg_bwd_dkdv gives each warpgroup 64
// keys of the block (dK and dV in its registers over every query tile of the group's heads), and
// wg_bwd_dq each warpgroup 64 query rows (dQ in its registers over the K/V tiles).
//
// Every product reads its B operand from shared memory and its A operand from shared memory or
// registers, in the forward's two forms (kernels/hopper/mma.cuh): K-major B (S^T = K Q^T,
// dP^T = V dO^T, S = Q K^T, dP = dO V^T: both operands' rows run along D) and MN-major B from
// registers' A (dV += P^T dO, dK += dS^T Q, dQ += dS K: the k index runs along the tile's rows, as V's
// keys do in O += P V). So no tile is ever transposed in shared memory, and P^T and dS^T go from the
// accumulators to the A operand in registers, as P does in the forward. Tiles are in the tensor
// cores' swizzled layout (common/swizzle.cuh), filled by cp.async through a STAGES-deep ring that
// every thread loads (fa2_bwd.cuh's bwd_ring, dkdv_steps); the products of a step run in order
// (issue, wait), the next step's tiles landing meanwhile. P^T is packed to the element type before dP^T is computed and widened again for
// dS^T (its fp32 scores die early, as in fa2_bwd). Masks (causal, sliding windows: hidden()), softcap
// (bwd_score), LSE and delta as in fa2_bwd.cuh.
//
// Atomic dQ (wg_bwd_config's ATOMIC_DQ, "-dq_atomic" variants): five products instead of seven. The
// dK/dV kernel also stores each step's packed dS^T to shared memory and multiplies it (A, MN-major)
// by the block's K (B, MN-major) into dQ's partial sums, which it adds to an fp32 buffer by vector
// atomics (wg_store_ds, wg_issue_dq, wg_add_dq); bwd_delta zeroes the buffer first and bwd_dq_convert scales and rounds it
// into dQ last. The atomics' order varies, so reruns are not bit-identical (--deterministic leaves
// these variants out).
#include "common/hopper_ptx.cuh"
#include "common/resources.cuh"
#include "common/swizzle.cuh"
#include "common/wgmma_ops.cuh"
#include "fa2_bwd.cuh"

namespace attn_k {

/// BLOCK_M: query rows a step (dK/dV) or a block (dQ); BLOCK_N: keys a block (dK/dV) or a step (dQ).
/// The side the block's warpgroups split (BLOCK_N for dK/dV, BLOCK_M for dQ) is 64 per warpgroup.
/// PART: as fa2_bwd.cuh's bwd_config (0 dK and dV, 1 dV only, 2 dK only).
/// ATOMIC_DQ: the dK/dV kernel adds dQ = dS K too, in fp32 atomics to p.dq_accum (each warpgroup
/// D / GROUPS of the columns, over the block's keys), and no dQ kernel runs: bwd_dq_convert writes dQ.
/// WINDOW, SOFTCAP, VARLEN: as fa2_bwd.cuh's bwd_config (a packed batch's atomic dQ sum is then
/// [H, total_q, D]). DV_: V's head dim where it is not D (0: D): V, dV, O and dO tiles are DV wide
/// and read at V's and O's own strides (p.v_*, p.o_*); dV += P^T dO, dP^T = V dO^T and dP = dO V^T
/// run over DV, the rest over D.
template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_, int PART_ = 0,
          bool ATOMIC_DQ_ = false, bool WINDOW_ = false, bool SOFTCAP_ = false, bool VARLEN_ = false, int DV_ = 0>
struct wg_bwd_config {
  static constexpr bool BF16 = BF16_, CAUSAL = CAUSAL_, ATOMIC_DQ = ATOMIC_DQ_, WINDOW = WINDOW_, SOFTCAP = SOFTCAP_;
  static constexpr bool VARLEN = VARLEN_;
  static constexpr int PART = PART_;
  static constexpr bool DO_DV = PART != 2, DO_DK = PART != 1;
  static_assert(PART >= 0 && PART <= 2, "PART: 0 both, 1 dV, 2 dK");
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, WARPS = WARPS_, STAGES = STAGES_;
  /// WS, warp-specialized (atomic dQ only): WARPS = BLOCK_N / 16 + 4, the last warpgroup a producer
  /// (wg_bwd_dkdv_ws_blocks). GROUPS: the computing warpgroups.
  static constexpr bool WS = ATOMIC_DQ_ && WARPS_ == BLOCK_N_ / 16 + 4;
  static constexpr int THREADS = WARPS * 32, GROUPS = WS ? WARPS / 4 - 1 : WARPS / 4;
  static_assert(!WS || GROUPS == 2, "WS: two computing warpgroups (128 keys) and the producer");
  /// WS's register hand-over (setmaxnreg): the producer's copies keep 56, the computing warpgroups
  /// the rest of the 168 a thread of 384 holds from launch (224). ptxas (CUDA 13.0, D 128) spilled
  /// 56-124 bytes with 24 / 240 and 40 / 232, 16 bytes with 56 / 224.
  static constexpr int WS_PRODUCER_REGS = 56, WS_COMPUTING_REGS = consumer_registers(THREADS, GROUPS, 56);
  static constexpr int W = swizzle<D>::W;  ///< bytes of a swizzled piece of a row
  static_assert(WARPS % 4 == 0, "whole warpgroups");
  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dim: a multiple of 16 in [32, 256]");
  static_assert(BLOCK_M % 16 == 0 && BLOCK_N % 16 == 0 && BLOCK_M <= 256 && BLOCK_N <= 256, "tiles");
  static_assert(STAGES >= 1 && STAGES <= 4, "STAGES in [1, 4]");
  static constexpr int DQ_N = D / GROUPS;  ///< atomic dQ: the columns a warpgroup adds
  /// V's and O's head dim; OWN_DV: their own strides (only then read: with DV = D the code is one
  /// set of strides, as before DV existed).
  static constexpr int DV = DV_ > 0 ? DV_ : D;
  static constexpr bool OWN_DV = DV_ > 0;
  static_assert(DV % 16 == 0 && DV >= 32 && DV <= 256, "V's head dim: a multiple of 16 in [32, 256]");
  static_assert(!ATOMIC_DQ || (PART == 0 && BLOCK_M == 64 && (GROUPS == 1 || DQ_N % 64 == 0)),
                "atomic dQ: dK and dV in one launch, 64 queries a step, whole 128-byte pieces a warpgroup");
};

/// The first 1024-byte boundary of the dynamic shared memory, where the swizzle pattern starts
/// (the layouts' sizes leave 1024 bytes for it).
__device__ __forceinline__ unsigned char* aligned_tiles(unsigned char* shared_raw) {
  return shared_raw + ((1024u - (smem_addr(shared_raw) & 1023u)) & 1023u);
}

/// Rows [row0, row0 + rows) of a [*, WD] tensor (WD: D, or V's and dO's DV) into a swizzled tile
/// (zero past row_end), by cp.async.
/// BY: the threads that share the copy (0: the block's; else BY threads, this one `first`).
template <class C, int WD = C::D, int BY = 0>
__device__ __forceinline__ void wg_load_rows(unsigned smem, const elem_bits* base, long long row_stride, int row0,
                                             int row_end, int rows, int first = 0) {
  constexpr int CHUNKS = WD / 8;
  for (int i = BY ? first : threadIdx.x; i < rows * CHUNKS; i += BY ? BY : C::THREADS) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    const bool valid = row0 + r < row_end;
    cp_async_16(smem + tile_offset<WD>(r, c, rows), base + (valid ? (row0 + r) * row_stride + c * 8 : 0), valid);
  }
}

/// acc = A B^T over KD (D, or DV for dP^T and dP): A is this warpgroup's 64 rows (from row a_row0)
/// of a tile of A_ROWS rows, B the N rows of a tile of N rows, both K-major (their rows run along
/// KD). Issued and committed.
template <class C, int N, int A_ROWS, int KD = C::D>
__device__ __forceinline__ void wg_rows_rows(float (&acc)[N / 2], unsigned a_tile, int a_row0, unsigned b_tile) {
  constexpr int W = swizzle<KD>::W;
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk) {
    const unsigned piece = kk * 32 / W, within = kk * 32 % W;
    const unsigned long long a = wg_desc<KD>(a_tile + piece * A_ROWS * W + a_row0 * W + within, 0, 8 * W);
    const unsigned long long b = wg_desc<KD>(b_tile + piece * N * W + within, 0, 8 * W);
    wgmma_op<C::BF16, N>::ss(acc, a, b, kk > 0);
  }
  wg_commit();
}

/// acc += A B: A in registers (K_ROWS / 16 fragments), B the K_ROWS rows of a tile read MN-major
/// (its rows are the k index, its ND columns the N dimension: D, or DV for dV += P^T dO). Issued and
/// committed.
template <class C, int K_ROWS, int ND = C::D>
__device__ __forceinline__ void wg_regs_rows(float (&acc)[ND / 2], const unsigned (&a)[K_ROWS / 16][4], unsigned b_tile) {
  constexpr int W = swizzle<ND>::W;
  wg_fence_operand(acc);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < K_ROWS / 16; ++kk) {
    const unsigned long long b = wg_desc<ND>(b_tile + kk * 16 * W, K_ROWS * W, 8 * W);
    wgmma_op<C::BF16, ND>::rs(acc, a[kk], b, 1);
  }
  wg_commit();
}

/// Keeps packed operands alive (unmoved, unreused) until the products reading them have completed.
template <int K>
__device__ __forceinline__ void wg_hold(unsigned (&a)[K][4]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[k][e])::"memory");
}

/// Accumulator element i of an m64nN tile: row (warp % 4) * 16 + g + 8 (i / 2 % 2), column
/// 8 (i / 4) + 2 t + i % 2. Packing two adjacent 8-column chunks makes one 16-wide A fragment.
template <bool BF16, int N>
__device__ __forceinline__ void wg_pack(unsigned (&a)[N / 16][4], const float (&x)[N / 2]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[kk][e] = pack2<BF16>(x[8 * kk + 2 * e], x[8 * kk + 2 * e + 1]);
}
template <bool BF16, int N>
__device__ __forceinline__ float wg_unpacked(const unsigned (&a)[N / 16][4], int i) {
  const unsigned w = a[i / 8][(i % 8) / 2];
  return to_float<BF16>(static_cast<elem_bits>(i % 2 ? w >> 16 : w & 0xffffu));
}

/// Writes this warpgroup's 64 accumulator rows of WD columns (from global row row0) times `scale`,
/// rows at or past row_end left alone.
template <class C, int WD = C::D>
__device__ __forceinline__ void wg_store_rows(elem_bits* base, long long row_stride, int row0, int row_end,
                                              const float (&acc)[WD / 2], float scale) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, w = (threadIdx.x / 32) % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + w * 16 + g + h * 8;
    if (row >= row_end) continue;
    elem_bits* out = base + row * row_stride;
#pragma unroll
    for (int df = 0; df < WD / 8; ++df)
      *reinterpret_cast<unsigned*>(out + df * 8 + t * 2) =
          pack2<C::BF16>(acc[4 * df + 2 * h] * scale, acc[4 * df + 2 * h + 1] * scale);
  }
}

/// Atomic dQ, dQ[m0, m0 + 64) += dS K for the block's keys in three parts. wg_store_ds: every
/// warpgroup stores its packed dS^T (its 64 keys by the 64 queries) to ds_smem, before any product
/// reads those registers; then a block barrier (bwd_ring's barrier after the step keeps the next
/// step's stores from the products reading this one's). COMPUTING_ONLY (WS): a barrier of the
/// computing warpgroups only, over a tile of its own each step (two, alternating).
template <class C, bool COMPUTING_ONLY = false>
__device__ __forceinline__ void wg_store_ds(const unsigned (&ds)[4][4], unsigned ds_smem) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4, g = lane / 4, t = lane % 4;
  // ds[kk][e]: key row (warp % 4) * 16 + g + 8 (e % 2) of this warpgroup's 64, queries 16 kk + 8 (e / 2) + 2 t, + 1
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = wg * 64 + (warp % 4) * 16 + g + 8 * (e % 2);
      st_shared_u32(ds_smem + tile_offset<64>(row, 2 * kk + e / 2, C::BLOCK_N) + 4 * t, ds[kk][e]);
    }
  fence_proxy_async();
  if constexpr (COMPUTING_ONLY) named_sync(1, C::GROUPS * 128);  // WS: the producer takes no part
  else __syncthreads();
}

/// acc = dS K: all of the block's dS^T (A, MN-major: its rows are the k index, keys) by this
/// warpgroup's D / GROUPS columns of K (B, MN-major). Issued and committed.
template <class C>
__device__ __forceinline__ void wg_issue_dq(float (&acc)[C::DQ_N / 2], unsigned ds_smem, unsigned k_smem) {
  constexpr int W = swizzle<64>::W, KW = C::W, N = C::DQ_N;
  const int wg = threadIdx.x / 128;
  const unsigned b_tile = k_smem + (C::GROUPS == 1 ? 0 : wg * (N / (KW / 2))) * C::BLOCK_N * KW;
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < C::BLOCK_N / 16; ++kk) {
    const unsigned long long a = wg_desc<64>(ds_smem + kk * 16 * W, C::BLOCK_N * W, 8 * W);
    const unsigned long long b = wg_desc<C::D>(b_tile + kk * 16 * KW, C::BLOCK_N * KW, 8 * KW);
    wgmma_op<C::BF16, N>::tt(acc, a, b, kk > 0);
  }
  wg_commit();
}

/// Adds the completed product to p.dq_accum (fp32, [batch][head][row][D], zeroed by bwd_delta; VARLEN,
/// [head][q0 + row][D], q0 the sequence's first row) by red.global.add.v4.f32: lanes t and t ^ 1 swap
/// halves, so the even one adds four columns of row g and the odd one four of row g + 8.
template <class C>
__device__ __forceinline__ void wg_add_dq(const bwd_params& p, int batch, int head, int m0,
                                          const float (&acc)[C::DQ_N / 2], int q0 = 0) {
  constexpr int N = C::DQ_N;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4, g = lane / 4, t = lane % 4;
  const bool odd = t & 1;
  const int row = m0 + (warp % 4) * 16 + g + (odd ? 8 : 0);
  const long long rows0 = C::VARLEN ? (long long)head * p.total_q + q0 : ((long long)batch * p.heads + head) * p.q_len;
  float* out = p.dq_accum + rows0 * C::D + wg * (C::GROUPS == 1 ? 0 : N) + (long long)row * C::D + 2 * (t & ~1);
#pragma unroll
  for (int nf = 0; nf < N / 8; ++nf) {
    // acc[4 nf + 2 h + j]: row g + 8 h, column 8 nf + 2 t + j
    const float s0 = odd ? acc[4 * nf] : acc[4 * nf + 2], s1 = odd ? acc[4 * nf + 1] : acc[4 * nf + 3];
    const float r0 = __shfl_xor_sync(0xffffffffu, s0, 1), r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
    if (row >= p.q_len) continue;
    if (odd) red_add_v4(out + nf * 8, r0, r1, acc[4 * nf + 2], acc[4 * nf + 3]);
    else red_add_v4(out + nf * 8, acc[4 * nf], acc[4 * nf + 1], r0, r1);
  }
}

/// dQ = softmax_scale * dq_accum in the element type at dQ's strides: one warp a row of [B, H, Nq]
/// (VARLEN: of [H, total_q]).
template <bool BF16, int D, bool VARLEN = false>
__device__ void bwd_dq_convert(const bwd_params& p) {
  warp_row w{};
  if (!w.find<VARLEN>(p)) return;
  const int lane = threadIdx.x % 32;
  elem_bits* dq = static_cast<elem_bits*>(p.dq) + w.at;
  const float* acc = p.dq_accum + w.row * D;
  for (int c = lane * 2; c < D; c += 64) {
    const float2 x = *reinterpret_cast<const float2*>(acc + c);
    *reinterpret_cast<unsigned*>(dq + c) = pack2<BF16>(x.x * p.softmax_scale, x.y * p.softmax_scale);
  }
}

/// The dK/dV kernels' steps, in three parts. wg_step_p: S^T (x: this warpgroup's 64 keys, from
/// key0 and key0 + 8 a thread, by the step's BLOCK_M queries from m0) becomes P^T by the rows' LSE
/// (lse2, log2 units), masked (MASKED: causal or a window), with the keys past kv_len zeroed
/// (TAIL: their P^T could be inf, exp2 of -LSE, which dQ's product would turn into NaN, inf x 0),
/// packed to the element type in pa; SOFTCAP: dS's factor P^T (1 - tanh^2) packed apart in pd
/// (PF = BLOCK_M; one element otherwise).
template <class C, int PF>
__device__ __forceinline__ void wg_step_p(const bwd_params& p, float (&x)[C::BLOCK_M / 2], const float* lse2, int m0,
                                          int key0, int t, int offset, bool masked, bool tail,
                                          unsigned (&pa)[C::BLOCK_M / 16][4], unsigned (&pd)[PF / 16][4]) {
  constexpr int M = C::BLOCK_M;
  float pf[PF / 2];
#pragma unroll
  for (int i = 0; i < M / 2; ++i) {
    const int col = 8 * (i / 4) + 2 * t + i % 2, key = key0 + 8 * (i / 2 % 2);
    float dtanh = 1.f;
    float v = bwd_score<C::SOFTCAP>(p, x[i], lse2[col], dtanh);
    if (masked && hidden<C::CAUSAL, C::WINDOW>(p, m0 + col + offset, key)) v = 0.f;
    if (tail && key >= p.kv_len) v = 0.f;
    x[i] = v;
    if constexpr (C::SOFTCAP) pf[i] = v * dtanh;
  }
  wg_pack<C::BF16, M>(pa, x);
  if constexpr (C::SOFTCAP) wg_pack<C::BF16, M>(pd, pf);
}
/// dS^T = P^T (dP^T - delta) (SOFTCAP: P^T (1 - tanh^2)) from x = dP^T, packed into ds.
template <class C, int PF>
__device__ __forceinline__ void wg_step_ds(float (&x)[C::BLOCK_M / 2], const unsigned (&pa)[C::BLOCK_M / 16][4],
                                           const unsigned (&pd)[PF / 16][4], const float* delta, int t,
                                           unsigned (&ds)[C::BLOCK_M / 16][4]) {
  constexpr int M = C::BLOCK_M;
#pragma unroll
  for (int i = 0; i < M / 2; ++i)
    x[i] = (C::SOFTCAP ? wg_unpacked<C::BF16, PF>(pd, i) : wg_unpacked<C::BF16, M>(pa, i)) *
           (x[i] - delta[8 * (i / 4) + 2 * t + i % 2]);
  wg_pack<C::BF16, M>(ds, x);
}
/// The block's dK (times the softmax scale) and dV, this warpgroup's 64 rows from n0 + 64 wg, at
/// K's strides and V's (K's when DV = D); VARLEN, from its sequence's first key.
template <class C>
__device__ __forceinline__ void wg_store_dkdv(const bwd_params& p, int batch, int kv_head, int n0,
                                              const float (&dk)[C::D / 2], const float (&dv)[C::DV / 2]) {
  const int wg = threadIdx.x / 128;
  const seq_rows first = C::VARLEN ? seq_rows::of(p, batch) : seq_rows{};
  const long long out_at = batch * p.kv_batch_stride + kv_head * p.kv_head_stride + (long long)first.k0 * p.kv_row_stride;
  // dV at V's strides (K's when DV = D), computed again here so nothing of them stays live through the loop.
  const long long v_row_out = C::OWN_DV ? p.v_row_stride : p.kv_row_stride;
  const long long v_out_at =
      C::OWN_DV ? batch * p.v_batch_stride + kv_head * p.v_head_stride + (long long)first.k0 * v_row_out : out_at;
  if constexpr (C::DO_DK)
    wg_store_rows<C>(static_cast<elem_bits*>(p.dk) + out_at, p.kv_row_stride, n0 + wg * 64, p.kv_len, dk, p.softmax_scale);
  if constexpr (C::DO_DV)
    wg_store_rows<C, C::DV>(static_cast<elem_bits*>(p.dv) + v_out_at, v_row_out, n0 + wg * 64, p.kv_len, dv, 1.f);
}

/// The dK/dV kernels' shared memory: K's and V's tiles, STAGES slots of [Q | dO] (K's and Q's
/// tiles D wide, V's and dO's DV: with DV = D the layout is the one before DV), DS_TILES tiles of a
/// step's dS^T (atomic dQ: [keys][queries] in the swizzled layout of 64-wide rows, read MN-major),
/// then each slot's row terms (LSE in log2 units, delta), from the first 1024-byte boundary.
template <class C, int DS_TILES>
struct wg_dkdv_layout {
  static constexpr int M = C::BLOCK_M, KV_TILE = C::BLOCK_N * C::D * 2, Q_TILE = M * C::D * 2;
  static constexpr int V_TILE = C::BLOCK_N * C::DV * 2, DO_TILE = M * C::DV * 2, STAGE = Q_TILE + DO_TILE;
  static constexpr int DS_TILE = C::BLOCK_N * M * 2;
  static_assert(!C::OWN_DV || (KV_TILE % 1024 == 0 && V_TILE % 1024 == 0 && Q_TILE % 1024 == 0 && DO_TILE % 1024 == 0),
                "dv != d: every tile a whole number of 1024-byte swizzle periods");
  unsigned char* tiles;
  unsigned k_smem, v_smem, stage0;
  __device__ __forceinline__ explicit wg_dkdv_layout(unsigned char* shared_raw)
      : tiles(aligned_tiles(shared_raw)), k_smem(smem_addr(tiles)), v_smem(k_smem + KV_TILE), stage0(v_smem + V_TILE) {}
  __device__ __forceinline__ unsigned q_stage(int s) const { return stage0 + s * STAGE; }
  __device__ __forceinline__ unsigned do_stage(int s) const { return stage0 + s * STAGE + Q_TILE; }
  __device__ __forceinline__ unsigned ds(int i) const { return stage0 + C::STAGES * STAGE + i * DS_TILE; }
  __device__ __forceinline__ float* row_terms() const {
    return reinterpret_cast<float*>(tiles + KV_TILE + V_TILE + C::STAGES * STAGE + DS_TILES * DS_TILE);
  }
  __device__ __forceinline__ float* lse_stage(int s) const { return row_terms() + 2 * s * M; }
  __device__ __forceinline__ float* delta_stage(int s) const { return row_terms() + (2 * s + 1) * M; }
};

template <class C>
__device__ __forceinline__ void wg_bwd_dkdv_blocks(const bwd_params& p) {
  static_assert(C::BLOCK_N == 64 * C::GROUPS, "64 keys per warpgroup");
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const wg_dkdv_layout<C, C::ATOMIC_DQ ? 1 : 0> sm(shared_raw);  // atomic dQ: the step's dS^T
  constexpr int M = C::BLOCK_M;
  const unsigned k_smem = sm.k_smem, v_smem = sm.v_smem, ds_smem = sm.ds(0);

  const int n_block = blockIdx.x, kv_head = blockIdx.y, batch = blockIdx.z;
  const int n0 = n_block * C::BLOCK_N, offset = p.kv_len - p.q_len;
  if (C::VARLEN && n0 >= p.kv_len) return;  // past the sequence's keys (the grid spans the longest)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4, g = lane / 4, t = lane % 4;
  const int key0 = n0 + wg * 64 + (warp % 4) * 16 + g;  // this thread's first key (and key0 + 8)
  const long long kv_at = batch * p.kv_batch_stride + kv_head * p.kv_head_stride;
  const long long v_at = C::OWN_DV ? batch * p.v_batch_stride + kv_head * p.v_head_stride : kv_at;
  const long long v_row = C::OWN_DV ? p.v_row_stride : p.kv_row_stride;
  wg_load_rows<C>(k_smem, static_cast<const elem_bits*>(p.k) + kv_at, p.kv_row_stride, n0, p.kv_len, C::BLOCK_N);
  wg_load_rows<C, C::DV>(v_smem, static_cast<const elem_bits*>(p.v) + v_at, v_row, n0, p.kv_len, C::BLOCK_N);

  const dkdv_steps<M, C::CAUSAL> steps(p, kv_head, n0);
  // A window masks every tile (its sides cut tiles anywhere; the loops keep the causal range, a
  // superset); else causal masks the tiles the diagonal crosses (fa2_bwd's rule).
  const bool windowed = attn_k::windowed<C::CAUSAL, C::WINDOW>(p);
  auto load = [&](int it) {
    const int head = steps.head(it), m0 = steps.m0(it), s = it % C::STAGES;
    const long long q_at = batch * p.q_batch_stride + head * p.q_head_stride;
    const long long o_at = C::OWN_DV ? batch * p.o_batch_stride + head * p.o_head_stride : q_at;
    wg_load_rows<C>(sm.q_stage(s), static_cast<const elem_bits*>(p.q) + q_at, p.q_row_stride, m0, p.q_len, M);
    wg_load_rows<C, C::DV>(sm.do_stage(s), static_cast<const elem_bits*>(p.d_o) + o_at,
                           C::OWN_DV ? p.o_row_stride : p.q_row_stride, m0, p.q_len, M);
    load_row_terms<M, C::THREADS, C::VARLEN>(p, batch, head, m0, sm.lse_stage(s), sm.delta_stage(s));
  };

  const int q0 = C::ATOMIC_DQ && C::VARLEN ? p.cu_seqlens_q[batch] : 0;  // the atomic dQ sum's first row
  float dk[C::D / 2], dv[C::DV / 2];
#pragma unroll
  for (int i = 0; i < C::D / 2; ++i) dk[i] = 0.f;
#pragma unroll
  for (int i = 0; i < C::DV / 2; ++i) dv[i] = 0.f;
  bwd_ring<C::STAGES, true>(steps.count, load, [&](int it, int s) {
    const int m0 = steps.m0(it);
    const float* lse2 = sm.lse_stage(s);
    const float* delta = sm.delta_stage(s);

    float x[M / 2];  // S^T: this warpgroup's 64 keys by the step's M queries
    wg_rows_rows<C, M, C::BLOCK_N>(x, k_smem, wg * 64, sm.q_stage(s));
    wg_wait<0>();
    wg_fence_operand(x);
    const bool masked = windowed || (C::CAUSAL && m0 + offset < n0 + C::BLOCK_N - 1);
    // Keys past kv_len (zero rows of K and V) only matter to dQ's product; the others never store
    // those keys' rows.
    const bool tail = C::ATOMIC_DQ && n0 + C::BLOCK_N > p.kv_len;
    constexpr int PF = C::SOFTCAP ? M : 16;
    unsigned pa[M / 16][4], ds[M / 16][4], pd[PF / 16][4];
    wg_step_p<C, PF>(p, x, lse2, m0, key0, t, offset, masked, tail, pa, pd);
    if constexpr (C::DO_DV) wg_regs_rows<C, M, C::DV>(dv, pa, sm.do_stage(s));  // dV += P^T dO
    if constexpr (C::DO_DK) wg_rows_rows<C, M, C::BLOCK_N, C::DV>(x, v_smem, wg * 64, sm.do_stage(s));  // dP^T = V dO^T
    wg_wait<0>();
    wg_fence_operand(x);
    wg_fence_operand(dv);
    wg_hold(pa);
    if constexpr (C::DO_DK) {
      wg_step_ds<C, PF>(x, pa, pd, delta, t, ds);
      if constexpr (C::ATOMIC_DQ) {  // dQ's product first, its atomics while dK's product runs
        wg_store_ds<C>(ds, ds_smem);
        float dq[C::DQ_N / 2];
        wg_issue_dq<C>(dq, ds_smem, k_smem);
        wg_regs_rows<C, M>(dk, ds, sm.q_stage(s));  // dK += dS^T Q
        wg_wait<1>();
        wg_fence_operand(dq);
        wg_add_dq<C>(p, batch, steps.head(it), m0, dq, q0);
      } else {
        wg_regs_rows<C, M>(dk, ds, sm.q_stage(s));  // dK += dS^T Q
      }
      wg_wait<0>();
      wg_fence_operand(dk);
      wg_hold(ds);
    }
  });

  wg_store_dkdv<C>(p, batch, kv_head, n0, dk, dv);
}

/// The warp-specialized dK/dV kernel (WS, atomic dQ): the steps as wg_bwd_dkdv_blocks's, without
/// its block barriers. After K and V land (every thread copies them), the last warpgroup keeps
/// WS_PRODUCER_REGS registers and one warp of it copies each step's Q, dO and row terms (cp.async
/// and plain stores, then a proxy fence) into a ring of STAGES slots, announcing each on the slot's
/// full barrier (an arrival a lane); the computing warpgroups take the rest of the registers, wait
/// for a slot, and give it back (an arrival a warpgroup on its empty barrier) once their products
/// have read it. The step's dS^T goes to one of two tiles in turn, behind a barrier of the
/// computing warpgroups only, so a warpgroup starts the next step while the other finishes this one.
template <class C>
__device__ __forceinline__ void wg_bwd_dkdv_ws_blocks(const bwd_params& p) {
  static_assert(C::WS && C::ATOMIC_DQ && C::PART == 0 && C::BLOCK_N == 64 * C::GROUPS, "WS: atomic dQ, 64 keys a warpgroup");
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const wg_dkdv_layout<C, 2> sm(shared_raw);  // two dS^T tiles, alternating by step; then the barriers
  constexpr int M = C::BLOCK_M;
  const unsigned k_smem = sm.k_smem, v_smem = sm.v_smem;
  const unsigned bars = smem_addr(sm.row_terms() + 2 * C::STAGES * M);
  auto full = [&](int s) { return bars + 8 * s; };
  auto empty = [&](int s) { return bars + 8 * (C::STAGES + s); };

  const int n_block = blockIdx.x, kv_head = blockIdx.y, batch = blockIdx.z;
  const int n0 = n_block * C::BLOCK_N, offset = p.kv_len - p.q_len;
  if (C::VARLEN && n0 >= p.kv_len) return;  // past the sequence's keys: the whole block, before any barrier
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4, g = lane / 4, t = lane % 4;
  const long long kv_at = batch * p.kv_batch_stride + kv_head * p.kv_head_stride;
  const long long v_at = C::OWN_DV ? batch * p.v_batch_stride + kv_head * p.v_head_stride : kv_at;
  const long long v_row = C::OWN_DV ? p.v_row_stride : p.kv_row_stride;
  wg_load_rows<C>(k_smem, static_cast<const elem_bits*>(p.k) + kv_at, p.kv_row_stride, n0, p.kv_len, C::BLOCK_N);
  wg_load_rows<C, C::DV>(v_smem, static_cast<const elem_bits*>(p.v) + v_at, v_row, n0, p.kv_len, C::BLOCK_N);
  cp_async_commit();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < C::STAGES; ++s) {
      mbar_init(full(s), 32);          // the producer warp's lanes
      mbar_init(empty(s), C::GROUPS);  // a computing warpgroup's leader each
    }
    mbar_init_fence();
  }
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();  // K, V and the barriers: the last block-wide barrier

  const dkdv_steps<M, C::CAUSAL> steps(p, kv_head, n0);
  if (wg == C::GROUPS) {  // the producer warpgroup
    wg_setmaxnreg_dec<C::WS_PRODUCER_REGS>();
    if (warp % 4 != 0) return;
    for (int it = 0; it < steps.count; ++it) {
      const int s = it % C::STAGES, head = steps.head(it), m0 = steps.m0(it);
      mbar_wait(empty(s), ((it / C::STAGES) & 1) ^ 1u);
      const long long q_at = batch * p.q_batch_stride + head * p.q_head_stride;
      const long long o_at = C::OWN_DV ? batch * p.o_batch_stride + head * p.o_head_stride : q_at;
      wg_load_rows<C, C::D, 32>(sm.q_stage(s), static_cast<const elem_bits*>(p.q) + q_at, p.q_row_stride, m0, p.q_len,
                                M, lane);
      wg_load_rows<C, C::DV, 32>(sm.do_stage(s), static_cast<const elem_bits*>(p.d_o) + o_at,
                                 C::OWN_DV ? p.o_row_stride : p.q_row_stride, m0, p.q_len, M, lane);
      cp_async_commit();
      load_row_terms<M, 32, C::VARLEN>(p, batch, head, m0, sm.lse_stage(s), sm.delta_stage(s), lane);
      cp_async_wait<0>();
      fence_proxy_async();  // this lane's copies, for the tensor cores' reads
      mbar_arrive(full(s));
    }
    return;
  }
  wg_setmaxnreg_inc<C::WS_COMPUTING_REGS>();
  const int key0 = n0 + wg * 64 + (warp % 4) * 16 + g;  // this thread's first key (and key0 + 8)
  const bool windowed = attn_k::windowed<C::CAUSAL, C::WINDOW>(p);
  const int q0 = C::VARLEN ? p.cu_seqlens_q[batch] : 0;  // the atomic dQ sum's first row
  float dk[C::D / 2], dv[C::DV / 2];
#pragma unroll
  for (int i = 0; i < C::D / 2; ++i) dk[i] = 0.f;
#pragma unroll
  for (int i = 0; i < C::DV / 2; ++i) dv[i] = 0.f;
  for (int it = 0; it < steps.count; ++it) {
    const int s = it % C::STAGES, m0 = steps.m0(it);
    mbar_wait(full(s), (it / C::STAGES) & 1);
    const float* lse2 = sm.lse_stage(s);
    const float* delta = sm.delta_stage(s);
    // S^T and dP^T issued together: dP^T's product runs while this warpgroup turns S^T into P^T
    // (FlashAttention-3's order; one more M / 2 accumulator), and dV's through dS^T's barrier.
    float x[M / 2], dp[M / 2];  // S^T and dP^T: this warpgroup's 64 keys by the step's M queries
    wg_rows_rows<C, M, C::BLOCK_N>(x, k_smem, wg * 64, sm.q_stage(s));
    wg_rows_rows<C, M, C::BLOCK_N, C::DV>(dp, v_smem, wg * 64, sm.do_stage(s));  // dP^T = V dO^T
    wg_wait<1>();
    wg_fence_operand(x);
    const bool masked = windowed || (C::CAUSAL && m0 + offset < n0 + C::BLOCK_N - 1);
    constexpr int PF = C::SOFTCAP ? M : 16;
    unsigned pa[M / 16][4], ds[M / 16][4], pd[PF / 16][4];
    wg_step_p<C, PF>(p, x, lse2, m0, key0, t, offset, masked, n0 + C::BLOCK_N > p.kv_len, pa, pd);
    wg_wait<0>();  // dP^T
    wg_fence_operand(dp);
    wg_step_ds<C, PF>(dp, pa, pd, delta, t, ds);  // reads pa: before dV's product takes it as an operand
    wg_regs_rows<C, M, C::DV>(dv, pa, sm.do_stage(s));  // dV += P^T dO, running through dS^T's barrier
    const unsigned ds_smem = sm.ds(it & 1);
    wg_store_ds<C, true>(ds, ds_smem);
    float dq[C::DQ_N / 2];
    wg_issue_dq<C>(dq, ds_smem, k_smem);
    wg_regs_rows<C, M>(dk, ds, sm.q_stage(s));  // dK += dS^T Q
    wg_wait<1>();                                // dV's and dQ's products
    wg_fence_operand(dq);
    wg_add_dq<C>(p, batch, steps.head(it), m0, dq, q0);
    wg_wait<0>();
    wg_fence_operand(dv);
    wg_fence_operand(dk);
    wg_hold(pa);
    wg_hold(ds);
    if (threadIdx.x % 128 == 0) mbar_arrive(empty(s));  // this warpgroup's reads of the slot are done
  }

  wg_store_dkdv<C>(p, batch, kv_head, n0, dk, dv);
}

/// The dK/dV kernel: a block per BLOCK_N keys of a (batch, K/V head); VARLEN, of its own sequence.
template <class C>
__device__ void wg_bwd_dkdv(const bwd_params& p) {
  if constexpr (C::WS)
    per_sequence<C::VARLEN, C::OWN_DV>(p, [](const bwd_params& s) { wg_bwd_dkdv_ws_blocks<C>(s); });
  else
    per_sequence<C::VARLEN, C::OWN_DV>(p, [](const bwd_params& s) { wg_bwd_dkdv_blocks<C>(s); });
}

template <class C>
__device__ __forceinline__ void wg_bwd_dq_blocks(const bwd_params& p) {
  static_assert(C::BLOCK_M == 64 * C::GROUPS, "64 query rows per warpgroup");
  // Q's and K's tiles are D wide, dO's and V's DV (with DV = D the layout is the one before DV).
  constexpr int N = C::BLOCK_N, Q_TILE = C::BLOCK_M * C::D * 2, KV_TILE = N * C::D * 2;
  constexpr int DO_TILE = C::BLOCK_M * C::DV * 2, V_TILE = N * C::DV * 2, STAGE = KV_TILE + V_TILE;
  static_assert(!C::OWN_DV || (KV_TILE % 1024 == 0 && V_TILE % 1024 == 0 && Q_TILE % 1024 == 0 && DO_TILE % 1024 == 0),
                "dv != d: every tile a whole number of 1024-byte swizzle periods");
  extern __shared__ __align__(128) unsigned char shared_raw[];
  unsigned char* tiles = aligned_tiles(shared_raw);
  const unsigned q_smem = smem_addr(tiles), do_smem = q_smem + Q_TILE, stage0 = do_smem + DO_TILE;
  auto k_stage = [&](int s) { return stage0 + s * STAGE; };
  auto v_stage = [&](int s) { return stage0 + s * STAGE + KV_TILE; };

  const int m_block = C::CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // the longest rows first
  const int head = blockIdx.y, batch = blockIdx.z, m0 = m_block * C::BLOCK_M, offset = p.kv_len - p.q_len;
  if (C::VARLEN && m0 >= p.q_len) return;  // past the sequence's queries (the grid spans the longest)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4, g = lane / 4, t = lane % 4;
  const long long q_at = batch * p.q_batch_stride + head * p.q_head_stride;
  const long long kv_at = batch * p.kv_batch_stride + (head / p.group) * p.kv_head_stride;
  const long long o_at = C::OWN_DV ? batch * p.o_batch_stride + head * p.o_head_stride : q_at;
  const long long v_at = C::OWN_DV ? batch * p.v_batch_stride + (head / p.group) * p.v_head_stride : kv_at;
  const long long v_row = C::OWN_DV ? p.v_row_stride : p.kv_row_stride, o_row = C::OWN_DV ? p.o_row_stride : p.q_row_stride;
  wg_load_rows<C>(q_smem, static_cast<const elem_bits*>(p.q) + q_at, p.q_row_stride, m0, p.q_len, C::BLOCK_M);
  wg_load_rows<C, C::DV>(do_smem, static_cast<const elem_bits*>(p.d_o) + o_at, o_row, m0, p.q_len, C::BLOCK_M);
  cp_async_commit();

  const long long row0 = lse_row0<C::VARLEN>(p, batch, head);
  const int i0 = m0 + wg * 64 + (warp % 4) * 16 + g;  // this thread's rows: i0 and i0 + 8
  float lse2[2], delta[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    lse2[h] = lse_log2(p.lse + row0, i0 + 8 * h, p.q_len);
    delta[h] = i0 + 8 * h < p.q_len ? p.delta[row0 + i0 + 8 * h] : 0.f;
  }
  const elem_bits* k = static_cast<const elem_bits*>(p.k) + kv_at;
  const elem_bits* v = static_cast<const elem_bits*>(p.v) + v_at;
  auto load = [&](int j) {
    wg_load_rows<C>(k_stage(j % C::STAGES), k, p.kv_row_stride, j * N, p.kv_len, N);
    wg_load_rows<C, C::DV>(v_stage(j % C::STAGES), v, v_row, j * N, p.kv_len, N);
  };

  float dq[C::D / 2];
#pragma unroll
  for (int i = 0; i < C::D / 2; ++i) dq[i] = 0.f;
  const bool windowed = attn_k::windowed<C::CAUSAL, C::WINDOW>(p);  // as in wg_bwd_dkdv
  bwd_ring<C::STAGES, true>(dq_key_tiles<C::BLOCK_M, N, C::CAUSAL>(p, m0), load, [&](int j, int s) {
    const int n0 = j * N;
    float x[N / 2], dp[N / 2];
    wg_rows_rows<C, N, C::BLOCK_M>(x, q_smem, wg * 64, k_stage(s));    // S = Q K^T
    wg_rows_rows<C, N, C::BLOCK_M, C::DV>(dp, do_smem, wg * 64, v_stage(s));  // dP = dO V^T
    wg_wait<0>();
    wg_fence_operand(x);
    wg_fence_operand(dp);
    const bool masked = windowed || n0 + N > p.kv_len || (C::CAUSAL && n0 + N - 1 > m0 + offset);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const int h = i / 2 % 2, n = n0 + 8 * (i / 4) + 2 * t + i % 2;
      float dtanh = 1.f;
      float pv = bwd_score<C::SOFTCAP>(p, x[i], lse2[h], dtanh);
      if (masked && (n >= p.kv_len || hidden<C::CAUSAL, C::WINDOW>(p, i0 + 8 * h + offset, n))) pv = 0.f;
      x[i] = (C::SOFTCAP ? pv * dtanh : pv) * (dp[i] - delta[h]);
    }
    unsigned ds[N / 16][4];
    wg_pack<C::BF16, N>(ds, x);
    wg_regs_rows<C, N>(dq, ds, k_stage(s));  // dQ += dS K
    wg_wait<0>();
    wg_fence_operand(dq);
    wg_hold(ds);
  });
  const seq_rows first = C::VARLEN ? seq_rows::of(p, batch) : seq_rows{};
  wg_store_rows<C>(static_cast<elem_bits*>(p.dq) + q_at + (long long)first.q0 * p.q_row_stride, p.q_row_stride,
                   m0 + wg * 64, p.q_len, dq, p.softmax_scale);
}

/// The dQ kernel: a block per BLOCK_M query rows of a (batch, head); VARLEN, of its own sequence.
template <class C>
__device__ void wg_bwd_dq(const bwd_params& p) {
  per_sequence<C::VARLEN, C::OWN_DV>(p, [](const bwd_params& s) { wg_bwd_dq_blocks<C>(s); });
}

}  // namespace attn_k
