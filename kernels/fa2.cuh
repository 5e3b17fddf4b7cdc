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
//
// Decode (few query rows, many keys): PACK puts the rows of the heads that share a K/V head in one
// M tile (row m of a K/V head's packed rows is query row m / group of head kv_head * group +
// m % group), so each K/V tile is read once per K/V head; SPLIT shares a row block's K/V tiles
// among num_splits blocks (blockIdx.x = row block * num_splits + split), each writing its
// normalized O in fp32 and its LSE to the workspace; up to FUSED_MERGE_SPLITS splits the last of
// them to finish (a counter per row block) merges them into O and the LSE (merge_splits), above it
// the combine kernel (combine_splits) does, launched after. BULK (sm_90, the
// family's axis `loader` 1): warp 0 loads each K/V row with one bulk copy (cp.async.bulk) counted on
// the stage's mbarrier, instead of every thread issuing 16-byte cp.async: measured on the H200,
// decode's warps were busy issuing instructions (the loads' address arithmetic among them), not
// waiting on memory. LENS: each sequence has its own K/V length (p.seqlens_k, FlashAttention's
// cache_seqlens), and the causal mask is bottom-right per sequence. PAGED: K/V rows are found
// through the page table (p.block_table), looked up a tile ahead of the copies (paged_loader).
//
// Variants: WINDOW, a sliding window (p.window_left/right): a block's K/V loop runs over the tiles
// its rows' windows reach, the tiles cut by the window's edges masked; SOFTCAP: each score s
// becomes C tanh(s scale / C) (in the kernel's raw q.k units: softcap_out tanh(s softcap_in))
// before the mask and the softmax. Head dims: the MMA loops run over D rounded up to 16 (DK), the
// extra columns zero; where D is not a multiple of 8 (33, 59, 111) rows are not 16-byte aligned and
// are loaded and stored by element (!ALIGNED). DV: V's and O's head dim when it is not D (d 192,
// dv 128): V's tiles, the P V loop, the accumulators and O run over DV (its own strides, p.v_* and
// p.o_*); DV 0 is D, and such a kernel reads K's and Q's strides for V and O as before. VARLEN: a
// packed variable-length batch (flash_attn_varlen_func): blockIdx.z is the sequence, whose rows
// start at p.cu_seqlens_q[z] in Q and O and p.cu_seqlens_k[z] in K and V; the grid spans the
// longest sequence, and a block past its own sequence's rows returns at once; the LSE is [H, total_q].
#include "common/attention.cuh"
#include "common/hopper_ptx.cuh"
#include "common/resources.cuh"
#include "common/combine.cuh"
#include "common/split_merge.cuh"

namespace attn_k {

template <bool B>
struct bool_constant {
  static constexpr bool value = B;
};

template <bool BF16_, int D_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int STAGES_, bool CAUSAL_,
          bool PACK_ = false, bool SPLIT_ = false, bool BULK_ = false, bool LENS_ = false, bool PAGED_ = false,
          bool WINDOW_ = false, bool SOFTCAP_ = false, int DV_ = 0, bool VARLEN_ = false>
struct fa2_config {
  static constexpr bool BF16 = BF16_;
  static constexpr int D = D_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
  /// The head dim the MMA loops run over: D rounded up to 16; columns [D, DK) of the shared tiles
  /// are zero-filled (they add nothing to Q K^T, and O's are never written).
  static constexpr int DK = mma_head_dim(D);
  /// V's and O's head dim, and the width its loops run over (DV rounded up to 16).
  static constexpr int DV = DV_ ? DV_ : D, DVK = mma_head_dim(DV);
  static constexpr bool OWN_DV = DV != D;  ///< V and O have their own strides (p.v_*, p.o_*)
  static constexpr int WARPS = WARPS_, STAGES = STAGES_;
  static constexpr bool CAUSAL = CAUSAL_, PACK = PACK_, SPLIT = SPLIT_, BULK = BULK_;
  static constexpr bool LENS = LENS_, PAGED = PAGED_;
  static constexpr bool WINDOW = WINDOW_, SOFTCAP = SOFTCAP_;
  static constexpr bool VARLEN = VARLEN_;
  static_assert(!VARLEN || !(PACK || SPLIT || LENS || PAGED), "a packed batch: no packed GQA, split-KV, kv_lens or pages");
  static constexpr int THREADS = WARPS * 32;
  static constexpr int WARP_M = BLOCK_M / WARPS;  ///< query rows per warp
  static constexpr int MI = WARP_M / 16;          ///< 16-row mma tiles per warp
  static constexpr int PITCH = DK + 8;            ///< shared-memory row pitch of Q and K, elements
  static constexpr int V_PITCH = DVK + 8;         ///< of V and the staged O
  static constexpr int Q_ELEMS = BLOCK_M * PITCH;
  static constexpr int KV_ELEMS = BLOCK_N * PITCH;  ///< a K tile
  static constexpr int V_ELEMS = BLOCK_N * V_PITCH;
  static constexpr int SHARED_BYTES =
      OWN_DV ? padded_tiles_bytes(BLOCK_M, BLOCK_N, STAGES, DK, DVK, 2) : padded_tiles_bytes(BLOCK_M, BLOCK_N, STAGES, DK, 2);  ///< = the host's
  static_assert(D >= 32 && D <= 256 && DV >= 32 && DV <= 256, "head dims: in [32, 256]");
  /// Whether every row starts 16 bytes apart (D a multiple of 8): the loads are then 16-byte
  /// cp.async and the stores 16-byte; otherwise (33, 59, 111) rows are only element-aligned and
  /// every load and store is an element's, predicated on its column (copy_chunk_elements and the
  /// element stores of O).
  static constexpr bool ALIGNED = D % 8 == 0 && DV % 8 == 0;
  static_assert(!BULK || (D == DK && DV == DVK), "the bulk loader copies whole rows: D and DV multiples of 16");
  static_assert(WARP_M % 16 == 0 && WARP_M >= 16, "each warp needs whole 16-row mma tiles");
  static_assert(BLOCK_N % 16 == 0, "BLOCK_N: a multiple of 16");
  static_assert(STAGES >= 1 && STAGES <= 8, "STAGES in [1, 8]");
  static_assert(!BULK || STAGES >= 2, "the bulk loader needs a ring of two stages or more");
  static constexpr int BARRIERS_OFFSET = (Q_ELEMS + STAGES * (KV_ELEMS + V_ELEMS)) * 2;  ///< BULK: a mbarrier per stage
};

/// One 8-column chunk of a shared tile when rows are only element-aligned (D not a multiple of 8:
/// 33, 59, 111): eight element loads from global row `src` (nullptr: a row past the keys or the
/// queries) predicated on col + e < D, packed and stored to shared memory. The store is
/// synchronous: the ring's block barrier orders it as it orders cp.async (whose groups are then
/// empty).
template <int W>
__device__ __forceinline__ void copy_chunk_elements(unsigned smem, const elem_bits* src, int col) {
  unsigned w[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    const unsigned lo = src != nullptr && col + e < W ? src[col + e] : 0u;
    const unsigned hi = src != nullptr && col + e + 1 < W ? src[col + e + 1] : 0u;
    w[e / 2] = lo | (hi << 16);
  }
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(smem), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}

/// Copies `rows` rows of W elements (D for K, DV for V) starting at global row `row0` into a padded
/// shared tile, zero-filling rows at or past `row_end` (and columns [W, W rounded up to 16)) so that
/// they contribute nothing.
template <class C, int W = C::D>
__device__ __forceinline__ void load_tile(unsigned smem, const elem_bits* base, long long row_stride,
                                          int row0, int row_end, int rows) {
  constexpr int WK = mma_head_dim(W), PITCH = WK + 8, CHUNKS = WK / 8;
  for (int c = threadIdx.x; c < rows * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    if constexpr (!C::ALIGNED) {
      copy_chunk_elements<W>(smem + (r * PITCH + col) * 2, row0 + r < row_end ? base + (row0 + r) * row_stride : nullptr,
                             col);
      continue;
    }
    const bool valid = row0 + r < row_end && (W == WK || col < W);
    const elem_bits* src = base + (valid ? (row0 + r) * row_stride + col : 0);
    cp_async_16(smem + (r * PITCH + col) * 2, src, valid);
  }
}

/// A paged cache's page lookups, one tile ahead of the copies: Nsight Compute saw the lookups miss
/// L1 (2.8% hits) and each tile's copies wait for them (DRAM at 62% of peak against 77% for
/// contiguous K/V, the same instruction count). `fetch(j)` looks up the pages of the rows this
/// thread copies in tile j; `load` copies that tile's K and V rows (zero-filled at or past
/// `row_end`) with them. Tiles are loaded in order, so fetch(j + 1) runs right after load(j),
/// a whole tile's work before its copies need it.
template <class C>
struct paged_loader {
  static constexpr int CHUNKS = C::DK / 8, TOTAL = C::BLOCK_N * CHUNKS;
  static constexpr int SLOTS = (TOTAL + C::THREADS - 1) / C::THREADS;  ///< chunks (and lookups) per thread
  /// Whether the pages are looked up ahead: with more than 16 chunks a thread (one warp, or two on
  /// 128-key tiles) the held page numbers made ptxas spill, so those look each row up as they copy.
  /// With dv != d (OWN_DV) K's and V's rows differ in width: each is copied by its own loop, its rows
  /// looked up as they are copied.
  static constexpr bool AHEAD = SLOTS <= 16 && !C::OWN_DV;
  const int* table;  ///< this sequence's row of the page table
  int shift;
  long long page_stride, row_stride;
  long long v_page_stride, v_row_stride;  ///< V's (OWN_DV; else K's)
  int page[AHEAD ? SLOTS : 1];

  __device__ __forceinline__ int lookup(int n, int row_end) const { return n < row_end ? table[n >> shift] : 0; }
  __device__ __forceinline__ void fetch(int j, int row_end) {
    if constexpr (AHEAD) {
#pragma unroll
      for (int i = 0; i < SLOTS; ++i) {
        const int c = threadIdx.x + i * C::THREADS;
        page[i] = c < TOTAL ? lookup(j * C::BLOCK_N + c / CHUNKS, row_end) : 0;
      }
    }
  }
  /// Tile j's rows of W elements of one tensor, each row's page looked up as it is copied.
  template <int W>
  __device__ __forceinline__ void load_rows(unsigned smem, const elem_bits* base, long long pstride, long long rstride,
                                            int j, int row_end) const {
    constexpr int WK = mma_head_dim(W), PITCH = WK + 8, CH = WK / 8;
    for (int c = threadIdx.x; c < C::BLOCK_N * CH; c += C::THREADS) {
      const int r = c / CH, col = (c % CH) * 8, n = j * C::BLOCK_N + r;
      const long long row = (long long)lookup(n, row_end) * pstride + (long long)(n & ((1 << shift) - 1)) * rstride;
      if constexpr (!C::ALIGNED) {
        copy_chunk_elements<W>(smem + (r * PITCH + col) * 2, n < row_end ? base + row : nullptr, col);
        continue;
      }
      const bool valid = n < row_end && (W == WK || col < W);
      cp_async_16(smem + (r * PITCH + col) * 2, base + (valid ? row + col : 0), valid);
    }
  }
  __device__ __forceinline__ void load(unsigned k_smem, unsigned v_smem, const elem_bits* k, const elem_bits* v,
                                       int j, int row_end) const {
    if constexpr (C::OWN_DV) {
      load_rows<C::D>(k_smem, k, page_stride, row_stride, j, row_end);
      load_rows<C::DV>(v_smem, v, v_page_stride, v_row_stride, j, row_end);
      return;
    }
    auto copy = [&](int c, int pg) {
      const int r = c / CHUNKS, col = (c % CHUNKS) * 8, n = j * C::BLOCK_N + r;
      if constexpr (!C::ALIGNED) {
        const long long row = pg * page_stride + (long long)(n & ((1 << shift) - 1)) * row_stride;
        copy_chunk_elements<C::D>(k_smem + (r * C::PITCH + col) * 2, n < row_end ? k + row : nullptr, col);
        copy_chunk_elements<C::D>(v_smem + (r * C::PITCH + col) * 2, n < row_end ? v + row : nullptr, col);
        return;
      }
      const bool valid = n < row_end && (C::D == C::DK || col < C::D);
      const long long at = valid ? pg * page_stride + (long long)(n & ((1 << shift) - 1)) * row_stride + col : 0;
      cp_async_16(k_smem + (r * C::PITCH + col) * 2, k + at, valid);
      cp_async_16(v_smem + (r * C::PITCH + col) * 2, v + at, valid);
    };
    if constexpr (AHEAD) {
#pragma unroll
      for (int i = 0; i < SLOTS; ++i)
        if (threadIdx.x + i * C::THREADS < TOTAL) copy(threadIdx.x + i * C::THREADS, page[AHEAD ? i : 0]);
    } else {
      for (int c = threadIdx.x; c < TOTAL; c += C::THREADS) copy(c, lookup(j * C::BLOCK_N + c / CHUNKS, row_end));
    }
  }
};

/// Where packed row m (PACK) or query row m of one (batch, head) lives in Q and O: its head and
/// its query row.
template <class C>
struct q_rows {
  int head, group;
  __device__ __forceinline__ int head_of(int m) const { return C::PACK ? head * group + m % group : head; }
  __device__ __forceinline__ int row_of(int m) const { return C::PACK ? m / group : m; }
};

/// The Q tile of rows [m0, m0 + BLOCK_M) of `rows` (PACK: gathered from the group's heads).
template <class C>
__device__ __forceinline__ void load_q(unsigned smem, const fwd_params& p, const elem_bits* q_batch,
                                       q_rows<C> at, int m0, int rows) {
  constexpr int CHUNKS = C::DK / 8;
  for (int c = threadIdx.x; c < C::BLOCK_M * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8, m = m0 + r;
    if constexpr (!C::ALIGNED) {
      copy_chunk_elements<C::D>(smem + (r * C::PITCH + col) * 2,
                             m < rows ? q_batch + at.head_of(m) * p.q_head_stride + at.row_of(m) * p.q_row_stride : nullptr,
                             col);
      continue;
    }
    const bool valid = m < rows && (C::D == C::DK || col < C::D);
    const elem_bits* src =
        q_batch + (valid ? at.head_of(m) * p.q_head_stride + at.row_of(m) * p.q_row_stride + col : 0);
    cp_async_16(smem + (r * C::PITCH + col) * 2, src, valid);
  }
}

/// One K/V tile: S = Q K^T, online softmax, O += P V. MASK: the tile is partial (the mask applies).
template <class C, bool MASK, class Masks>
__device__ __forceinline__ void attend_tile(unsigned q_smem, unsigned k_smem, unsigned v_smem,
                                            float (&acc)[C::MI][C::DVK / 8][4],
                                            float (&row_max)[C::MI][2], float (&row_sum)[C::MI][2],
                                            int n0, int first_row, const Masks& mask, float scale_log2,
                                            float cap_in = 0.f, float cap_out = 0.f) {
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
  for (int kk = 0; kk < C::DK / 16; ++kk) {
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

  if constexpr (C::SOFTCAP) {  // cap the scores before the mask and the softmax see them
#pragma unroll
    for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
      for (int nf = 0; nf < C::BLOCK_N / 8; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][nf][e] = cap_out * fast_tanh(s[mi][nf][e] * cap_in);
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
    for (int df = 0; df < C::DVK / 8; ++df) {
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
    for (int dj = 0; dj < C::DVK / 16; ++dj) {
      unsigned b[4];
      ldmatrix_x4_trans(b, v_smem + ((kk * 16 + v_row) * C::V_PITCH + dj * 16 + v_col) * 2);
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) {
        mma_16816<C::BF16>(acc[mi][2 * dj], p[mi][kk], b[0], b[1]);
        mma_16816<C::BF16>(acc[mi][2 * dj + 1], p[mi][kk], b[2], b[3]);
      }
    }
  }
}

/// Split-KV's merge, in the blocks of a row block after each has written its partial O (fp32) and
/// LSE: each counts itself on the row block's counter (`block`, in the SPLIT_COUNTERS before
/// p.o_partial); the last one merges the `rows` rows of the row block, writes O and the LSE, and sets
/// the counter back to 0 for the next launch. row_of(r): the row's index in [B, H, Nq] (the LSE's
/// and split 0's partial); o_row(r): where its O goes. The other blocks' partials are read past L1
/// (ld.global.cg), after the fences that order their writes before their counts.
/// The merge runs in the block's (free) shared memory, as many rows at a time as their splits'
/// weights fit: the threads load every (row, split)'s LSE together, a thread a row merges them
/// (common/split_merge.cuh's rule) and leaves each split's weight; then the threads take (row, 4 columns) items, 4 items each with every split's
/// loads in flight together (measured on the H200: a warp a row, its loads one after another, made
/// the merging block a tail of 5-60 us).
template <class C, class RowOf, class ORow>
__device__ __forceinline__ void merge_splits(const fwd_params& p, unsigned char* shared_raw, long long block, int splits,
                                             int rows, RowOf row_of, ORow o_row) {
  int* counter = reinterpret_cast<int*>(p.o_partial) - SPLIT_COUNTERS + block;
  int& last = *reinterpret_cast<int*>(shared_raw);  // shared memory is free after the main loop
  __threadfence();  // this block's partials are visible to every block before it counts itself
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == splits - 1;
    if (last) *counter = 0;  // every split has counted: ready for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const long long total = (long long)p.batch * p.heads * p.q_len;  // rows of one split's partials
  float* weight = reinterpret_cast<float*>(shared_raw) + 4;        // [rows of a pass][splits]
  const int chunk = max(1, min(rows, (C::SHARED_BYTES / 4 - 4) / splits));
  constexpr int V = C::ALIGNED ? 4 : 1, COLS = (C::DV + V - 1) / V;  // columns an item: float4 where rows allow
  constexpr int ITEMS = 4;
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int n = min(chunk, rows - r0);
    for (int i = threadIdx.x; i < n * splits; i += C::THREADS)  // every (row, split)'s LSE at once
      weight[i] = __ldcg(p.lse_partial + (i % splits) * total + row_of(r0 + i / splits));
    __syncthreads();
    for (int r = threadIdx.x; r < n; r += C::THREADS) {  // a thread a row: its LSE, its splits' weights
      const long long row = row_of(r0 + r);
      float* w = weight + r * splits;
      auto alone = [](float x) { return x; };  // one lane: nothing to reduce across
      const float lse = merged_lse<1>(0, splits, [&](int s) { return w[s]; }, alone, alone);
      for (int s = 0; s < splits; ++s) w[s] = split_weight(w[s], lse);
      p.lse[row] = lse;
    }
    __syncthreads();
    for (int base = threadIdx.x; base < n * COLS; base += ITEMS * C::THREADS) {
      float x[ITEMS][V];
      int r[ITEMS], c[ITEMS];
      long long at[ITEMS];
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        const int it = min(base + k * C::THREADS, n * COLS - 1);  // past the end: the last item again, not stored
        r[k] = it / COLS, c[k] = (it % COLS) * V;
        at[k] = row_of(r0 + r[k]) * C::DV + c[k];
#pragma unroll
        for (int e = 0; e < V; ++e) x[k][e] = 0.f;
      }
      for (int s = 0; s < splits; ++s) {
        const float* o_part = p.o_partial + s * total * C::DV;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
          const float w = weight[r[k] * splits + s];
          if constexpr (V == 4) {
            const float4 v = __ldcg(reinterpret_cast<const float4*>(o_part + at[k]));
            x[k][0] += w * v.x, x[k][1] += w * v.y, x[k][2] += w * v.z, x[k][3] += w * v.w;
          } else if (c[k] < C::DV) {
            x[k][0] += w * __ldcg(o_part + at[k]);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        if (base + k * C::THREADS >= n * COLS) break;
        elem_bits* o = o_row(r0 + r[k]) + c[k];
        if constexpr (V == 4) {
          const unsigned lo = pack2<C::BF16>(x[k][0], x[k][1]), hi = pack2<C::BF16>(x[k][2], x[k][3]);
          *reinterpret_cast<uint2*>(o) = make_uint2(lo, hi);
        } else if (c[k] < C::DV) {
          *o = from_float<C::BF16>(x[k][0]);
        }
      }
    }
    __syncthreads();  // the weights of this pass are read before the next pass writes its own
  }
}

template <class C>
__device__ void fa2_forward(const fwd_params& p) {
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const unsigned q_smem = smem_addr(shared_raw);
  const unsigned kv_smem = q_smem + C::Q_ELEMS * 2;  // stage s: its K tile, then its V tile
  auto k_stage = [&](int s) {
    if constexpr (C::OWN_DV) return kv_smem + s * (C::KV_ELEMS + C::V_ELEMS) * 2;
    else return kv_smem + (2 * s) * C::KV_ELEMS * 2;  // as before DV (the same address)
  };
  auto v_stage = [&](int s) {
    if constexpr (C::OWN_DV) return kv_smem + (s * (C::KV_ELEMS + C::V_ELEMS) + C::KV_ELEMS) * 2;
    else return kv_smem + (2 * s + 1) * C::KV_ELEMS * 2;
  };

  // Causal: the heaviest query blocks (last rows) are launched first. SPLIT: the splits of a row
  // block are neighbours in x.
  const int splits = C::SPLIT ? p.num_splits : 1;
  const int split = C::SPLIT ? blockIdx.x % splits : 0;
  const int m_blocks = C::SPLIT ? gridDim.x / splits : gridDim.x;
  const int m_index = C::SPLIT ? blockIdx.x / splits : blockIdx.x;
  const int m_block = C::CAUSAL ? m_blocks - 1 - m_index : m_index;
  const int head = blockIdx.y, batch = blockIdx.z;  // PACK: head is the K/V head
  const int m0 = m_block * C::BLOCK_M;
  const int group = C::PACK ? p.group : 1;
  // VARLEN: the sequence's first rows in the packed Q/O and K/V, and its own lengths.
  const long long q_row0 = C::VARLEN ? p.cu_seqlens_q[batch] : 0, k_row0 = C::VARLEN ? p.cu_seqlens_k[batch] : 0;
  const int q_len = C::VARLEN ? p.cu_seqlens_q[batch + 1] - (int)q_row0 : p.q_len;
  if (C::VARLEN && m0 >= q_len) return;  // past the sequence's rows (the grid spans the longest)
  const int rows = q_len * group;  // query rows of the block's head(s)
  const q_rows<C> at{head, group};
  const seq_lengths lengths{q_len, C::VARLEN ? p.cu_seqlens_k[batch + 1] - (int)k_row0
                                             : C::LENS ? p.seqlens_k[batch] : p.kv_len};
  using mask_type = attention_mask<C::CAUSAL, seq_lengths, C::WINDOW>;
  const mask_type mask = C::WINDOW ? mask_type::of(lengths, p.window_left, p.window_right) : mask_type::of(lengths);

  const elem_bits* q_batch = static_cast<const elem_bits*>(p.q) + batch * p.q_batch_stride + q_row0 * p.q_row_stride;
  const head_inputs in = inputs_of(p, batch, C::PACK ? head * group : head);
  // PAGED: K/V of the block's K/V head in every page, and row n's offset from there.
  const long long kv_head_offset = ((C::PACK ? head * group : head) / p.group) * p.kv_head_stride;
  const elem_bits* k = C::PAGED ? static_cast<const elem_bits*>(p.k) + kv_head_offset : in.k + k_row0 * p.kv_row_stride;
  // OWN_DV: V by its own strides (the K/V head's offset, and its batch's unless paged).
  const int kv_head = (C::PACK ? head * group : head) / p.group;
  const elem_bits* v = C::OWN_DV ? static_cast<const elem_bits*>(p.v) + kv_head * p.v_head_stride +
                                       (C::PAGED ? 0 : batch * p.v_batch_stride + k_row0 * p.v_row_stride)
                       : C::PAGED ? static_cast<const elem_bits*>(p.v) + kv_head_offset
                                  : in.v + k_row0 * p.kv_row_stride;
  const long long v_page_stride = C::OWN_DV ? p.v_batch_stride : p.kv_batch_stride;
  const long long v_row_stride = C::OWN_DV ? p.v_row_stride : p.kv_row_stride;
  const int* pages = C::PAGED ? p.block_table + (long long)batch * p.pages_per_seq : nullptr;
  paged_loader<C> paging{pages, p.page_shift, p.kv_batch_stride, p.kv_row_stride, v_page_stride, v_row_stride, {}};
  // Row n's offset from K's (page_stride, row_stride: K's) or V's base.
  auto row_offset = [&](int n, long long page_stride, long long row_stride) -> long long {
    if constexpr (C::PAGED)
      return (long long)pages[n >> p.page_shift] * page_stride + (long long)(n & ((1 << p.page_shift) - 1)) * row_stride;
    else
      return (long long)n * row_stride;
  };
  // The query rows [q_first, q_last] the block holds, and the tiles they attend to.
  const int q_first = at.row_of(m0), q_last = at.row_of(min(m0 + C::BLOCK_M, rows) - 1);
  kv_tile_range range{mask.keys_begin(q_first) / C::BLOCK_N,
                      (mask.keys_end(q_first, q_last - q_first + 1) + C::BLOCK_N - 1) / C::BLOCK_N};
  if (C::WINDOW) range.end = max(range.end, range.first);  // rows whose windows hold no key
  if (C::SPLIT) range = split_share(range, split, splits);  // empty when there are more splits than tiles
  // Tiles [full_first, full_end) are attended unmasked. Causal: two loops rather than a branch per
  // tile keep the mask's registers out of the hot loop (measured faster on the H200; for
  // non-causal the single loop below was faster).
  kv_full_tiles full = mask.template full_tiles<C::BLOCK_N>(q_first, q_last, range);
  full.full_end = max(full.full_end, full.full_first);  // a split past the unmasked tiles

  float acc[C::MI][C::DVK / 8][4];
  float row_max[C::MI][2], row_sum[C::MI][2];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int df = 0; df < C::DVK / 8; ++df)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][df][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = neg_inf();
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  load_q<C>(q_smem, p, q_batch, at, m0, rows);
  if constexpr (C::PAGED && !C::BULK)
    if (range.count() > 0) paging.fetch(range.first, mask.kv_len());  // the first tile's pages
  cp_async_commit();
  const unsigned bars = q_smem + C::BARRIERS_OFFSET;
  auto bar = [&](int stage) { return bars + 8 * stage; };
  if constexpr (C::BULK) {
    if (threadIdx.x == 0) {
      for (int s = 0; s < C::STAGES; ++s) mbar_init(bar(s), 1);
      mbar_init_fence();
    }
    __syncthreads();
  }
  auto load_kv = [&](int j, int stage) {
    if constexpr (C::BULK) {  // warp 0: a bulk copy per row, rows past the keys zeroed
      if (threadIdx.x >= 32) return;
      const int lane = threadIdx.x, n0 = j * C::BLOCK_N, valid = min(C::BLOCK_N, mask.kv_len() - n0);
      if (lane == 0) mbar_arrive_expect_tx(bar(stage), valid * (C::D + C::DV) * 2);
      fence_proxy_async();  // the consumers' reads of this stage (ordered by the block barrier) come first
      for (int r = lane; r < C::BLOCK_N; r += 32) {
        const unsigned k_row = k_stage(stage) + r * C::PITCH * 2, v_row = v_stage(stage) + r * C::V_PITCH * 2;
        if (r < valid) {
          const long long at = row_offset(n0 + r, p.kv_batch_stride, p.kv_row_stride);
          bulk_load(k_row, k + at, C::D * 2, bar(stage));
          bulk_load(v_row, v + (C::OWN_DV ? row_offset(n0 + r, v_page_stride, v_row_stride) : at), C::DV * 2, bar(stage));
        } else {
          for (int c = 0; c < C::D * 2; c += 16) {
            asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(k_row + c), "r"(0u) : "memory");
            if constexpr (!C::OWN_DV)
              asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(v_row + c), "r"(0u) : "memory");
          }
          if constexpr (C::OWN_DV)
            for (int c = 0; c < C::DV * 2; c += 16)
              asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(v_row + c), "r"(0u) : "memory");
        }
      }
    } else if constexpr (C::PAGED) {
      paging.load(k_stage(stage), v_stage(stage), k, v, j, mask.kv_len());
      if (j + 1 < range.end) paging.fetch(j + 1, mask.kv_len());
    } else {
      load_tile<C>(k_stage(stage), k, p.kv_row_stride, j * C::BLOCK_N, mask.kv_len(), C::BLOCK_N);
      load_tile<C, C::DV>(v_stage(stage), v, v_row_stride, j * C::BLOCK_N, mask.kv_len(), C::BLOCK_N);
    }
  };
  // Commits a ring stage's loads (cp.async: a group; bulk copies: nothing, their mbarrier counts),
  // and waits until tile j has landed.
  auto commit = [&] {
    if constexpr (!C::BULK) cp_async_commit();
  };
  auto attend = [&](int j, int stage, auto masked) {
    if constexpr (C::PACK)
      attend_tile<C, decltype(masked)::value>(q_smem, k_stage(stage), v_stage(stage), acc, row_max, row_sum,
                                              j * C::BLOCK_N, m0, packed_row_masks<decltype(mask.rows())>{mask.rows(), group},
                                              p.scale_log2, p.softcap_in, p.softcap_out);
    else
      attend_tile<C, decltype(masked)::value>(q_smem, k_stage(stage), v_stage(stage), acc, row_max, row_sum,
                                              j * C::BLOCK_N, m0, mask.rows(), p.scale_log2, p.softcap_in, p.softcap_out);
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
      commit();
    }
    if constexpr (C::BULK) cp_async_wait<0>();  // Q (the tiles come through their mbarriers)
    auto wait_tile = [&](int j) {
      if constexpr (C::BULK) mbar_wait(bar(stage_of(j)), ((j - range.first) / C::STAGES) & 1);
      else cp_async_wait<C::STAGES - 2>();
    };
    auto refill = [&](int j) {  // after the barrier: every warp is done with tile j-1's stage
      const int next = j + C::STAGES - 1;
      if (next < range.end) load_kv(next, stage_of(next));
      commit();
    };
    if constexpr (C::CAUSAL || C::WINDOW) {
      runs([&](int j, auto masked) {
        wait_tile(j);
        __syncthreads();  // tile j visible to all
        refill(j);
        attend(j, stage_of(j), masked);
      });
    } else {
      // Only a ragged last tile is partial: one loop with the branch after the loads (measured
      // faster than two loops, and than the branch around the whole step).
      for (int j = range.first; j < range.end; ++j) {
        wait_tile(j);
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

  // Normalize, write O and the LSE: through shared memory for 16-byte coalesced stores; SPLIT:
  // this split's O in fp32 and its LSE, straight from the registers, to the workspace.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  elem_bits* o_stage = reinterpret_cast<elem_bits*>(shared_raw);  // rows of V_PITCH
  // Where row m's O goes: by O's own strides with dv != d, else Q's (read where they are used, as
  // before DV: the dense kernel's code is unchanged).
  auto o_row_of = [&](int m) -> elem_bits* {
    if constexpr (C::OWN_DV)
      return static_cast<elem_bits*>(p.o) + batch * p.o_batch_stride + at.head_of(m) * p.o_head_stride +
             (q_row0 + at.row_of(m)) * p.o_row_stride;
    else
      return static_cast<elem_bits*>(p.o) + batch * p.q_batch_stride + at.head_of(m) * p.q_head_stride +
             (q_row0 + at.row_of(m)) * p.q_row_stride;
  };
  // Row (b, h, i) of the output, [B, H, Nq]; SPLIT: of this split's part of the workspace; VARLEN:
  // [H, total_q].
  auto out_row = [&](int m) {
    if constexpr (C::VARLEN) return (long long)at.head_of(m) * p.total_q + q_row0 + at.row_of(m);
    else return ((long long)(split * p.batch + batch) * p.heads + at.head_of(m)) * p.q_len + at.row_of(m);
  };
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sum = quad_sum(row_sum[mi][h]);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int r = warp * C::WARP_M + mi * 16 + g + h * 8;
      if (C::SPLIT) {
        if (m0 + r < rows) {
          float* o_part = p.o_partial + out_row(m0 + r) * C::DV;
          if constexpr (C::ALIGNED) {
#pragma unroll
            for (int df = 0; df < C::DV / 8; ++df)
              *reinterpret_cast<float2*>(o_part + df * 8 + t * 2) =
                  make_float2(acc[mi][df][h * 2] * inv, acc[mi][df][h * 2 + 1] * inv);
          } else {  // rows of DV floats are only 4-byte aligned: a column at a time, up to DV
#pragma unroll
            for (int df = 0; df < C::DVK / 8; ++df)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (df * 8 + t * 2 + e < C::DV) o_part[df * 8 + t * 2 + e] = acc[mi][df][h * 2 + e] * inv;
          }
        }
      } else {
#pragma unroll
        for (int df = 0; df < (C::DV + 7) / 8; ++df) {  // DV not a multiple of 8: its last chunk in part
          *reinterpret_cast<unsigned*>(&o_stage[r * C::V_PITCH + df * 8 + t * 2]) =
              pack2<C::BF16>(acc[mi][df][h * 2] * inv, acc[mi][df][h * 2 + 1] * inv);
        }
      }
      if (t == 0 && m0 + r < rows) {
        (C::SPLIT ? p.lse_partial : p.lse)[out_row(m0 + r)] = row_lse(row_max[mi][h], sum, p.scale_log2);
      }
    }
  }
  if constexpr (C::SPLIT) {
    if (splits > FUSED_MERGE_SPLITS) return;  // the combine kernel merges
    merge_splits<C>(p, shared_raw, (batch * (long long)gridDim.y + head) * m_blocks + m_block, splits,
                    min(C::BLOCK_M, rows - m0), [&](int r) { return out_row(m0 + r) - (long long)split * p.batch * p.heads * p.q_len; },
                    [&](int r) { return o_row_of(m0 + r); });
    return;
  }
  __syncthreads();
  if constexpr (!C::ALIGNED) {  // element-aligned rows: an element a thread, up to DV
    for (int c = threadIdx.x; c < C::BLOCK_M * C::DV; c += C::THREADS) {
      const int r = c / C::DV, col = c % C::DV, m = m0 + r;
      if (m >= rows) continue;
      o_row_of(m)[col] = o_stage[r * C::V_PITCH + col];
    }
    return;
  }
  constexpr int CHUNKS = C::DV / 8;
  for (int c = threadIdx.x; c < C::BLOCK_M * CHUNKS; c += C::THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8, m = m0 + r;
    if (m < rows) {
      *reinterpret_cast<uint4*>(o_row_of(m) + col) = *reinterpret_cast<const uint4*>(&o_stage[r * C::V_PITCH + col]);
    }
  }
}

}  // namespace attn_k
