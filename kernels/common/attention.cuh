#pragma once
// The attention core every family shares (fa2 on mma.sync, wgmma and hopper on warpgroup MMA,
// mfma on AMD's matrix cores): where a head's inputs are, which K/V tiles a block of query rows
// attends to and which of them the mask touches (attention_mask), and one online-softmax step
// (common/softmax.cuh). Vendor-neutral: common/vendor.cuh picks the device primitives.
#include "common/params.cuh"
#include "common/softmax.cuh"
#include "common/window.cuh"
#include "common/vendor.cuh"

namespace attn_k {

/// Q, K and V of one (batch, head); GQA/MQA heads read K/V head head / group.
struct head_inputs {
  const elem_bits* q;
  const elem_bits* k;
  const elem_bits* v;
};
__device__ __forceinline__ head_inputs inputs_of(const fwd_params& p, int batch, int head) {
  head_inputs in;
  in.q = static_cast<const elem_bits*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride;
  const long long kv_base = batch * p.kv_batch_stride + (head / p.group) * p.kv_head_stride;
  in.k = static_cast<const elem_bits*>(p.k) + kv_base;
  in.v = static_cast<const elem_bits*>(p.v) + kv_base;
  return in;
}

/// One block's view of the lengths its mask reads (attention_mask's Lengths): a sequence of a
/// packed batch, or a batch entry's own kv_len.
struct seq_lengths {
  int q_len, kv_len;
};

/// The K/V tiles [first, end) that a block of query rows attends to, in tiles of the family's
/// BLOCK_N keys. Today's masks start at tile 0; a sliding window (or a split-KV block's share)
/// starts later, so loops run from `first` and compute a tile's keys from its index j.
struct kv_tile_range {
  int first, end;
  __device__ __forceinline__ int count() const { return end - first; }
};

/// The K/V tiles of a range that the mask touches for a span of query rows (tile_kind).
/// [full_first, full_end) need no mask for any of those rows; the others of the range are partial
/// for some row (masked with attention_mask::row); tiles outside the range are empty.
struct kv_full_tiles {
  int full_first, full_end;
};
enum class tile_kind { empty, partial, full };


/// Which keys each query row sees, and from that which tiles are empty, partial or full. Query
/// row i sees keys [0, key_end(i)): all kv_len of them (CAUSAL false), or (bottom-right aligned
/// causal: causal_offset = kv_len - q_len) those up to i + causal_offset. The mask is applied to
/// a partial tile before the softmax runs (row_limit), so the softmax never sees it.
///
/// WINDOW (a sliding window, FlashAttention's window_size): row i sees keys
/// [key_begin(i), key_end(i)) = [i + causal_offset - left, i + causal_offset + right + 1) within
/// [0, kv_len), a side of -1 not limiting (causal: right 0). Its range starts at the first row's
/// left edge (first > 0) and has partial tiles on both of its edges (full_first > first); a
/// split-KV block intersects the range with its share. kv_len per batch entry comes in through
/// the constructor. Lengths: fwd_params, or any type with q_len and kv_len (fa2's per-block view).
template <bool CAUSAL, class Lengths = fwd_params, bool WINDOW = false>
struct attention_mask {
  const Lengths* params;  ///< read where used, as the kernels did before the mask existed
  int causal_offset;
  int left = -1, right = -1;  ///< WINDOW: the window's sides (-1: no limit on that side)

  __device__ __forceinline__ static attention_mask of(const Lengths& p) {
    return {&p, p.kv_len - p.q_len};  // bottom-right alignment
  }
  __device__ __forceinline__ static attention_mask of(const Lengths& p, int left, int right) {
    return {&p, p.kv_len - p.q_len, left, CAUSAL ? 0 : right};
  }
  __device__ __forceinline__ int q_len() const { return params->q_len; }
  __device__ __forceinline__ int kv_len() const { return params->kv_len; }

  /// WINDOW: the first key row i sees, and one past its last (either may lie outside [0, kv_len)
  /// when the row sees no key; callers clamp).
  __device__ __forceinline__ int key_begin(int i) const { return window_key_begin(i, causal_offset, left); }
  __device__ __forceinline__ int key_end(int i) const { return window_key_end(i, causal_offset, right, kv_len()); }

  /// The keys that query rows [m0, m0 + rows) see together: [0, keys_end()) (all, or when causal
  /// those up to the last row's key; rows past q_len see nothing).
  __device__ __forceinline__ int keys_end(int m0, int rows) const {
    int kv_end = kv_len();
    if (WINDOW) return key_end(min(m0 + rows, q_len()) - 1);
    if (CAUSAL) {
      const int last_row = min(m0 + rows, q_len()) - 1;
      kv_end = max(0, min(kv_end, last_row + causal_offset + 1));
    }
    return kv_end;
  }
  /// The first key that row m0 (the first of a span) sees: 0 but for a window's left edge.
  __device__ __forceinline__ int keys_begin(int m0) const { return WINDOW ? min(key_begin(m0), kv_len()) : 0; }

  /// The K/V tiles of BLOCK_N keys that query rows [m0, m0 + ROWS) attend to (WINDOW: from the
  /// first row's left edge; empty when the rows' windows hold no key).
  template <int ROWS, int BLOCK_N>
  __device__ __forceinline__ kv_tile_range range(int m0) const {
    const int end = (keys_end(m0, ROWS) + BLOCK_N - 1) / BLOCK_N;
    if constexpr (WINDOW) {
      const int first = keys_begin(m0) / BLOCK_N;
      return {first, max(end, first)};
    }
    return {0, end};
  }

  /// The tiles of `r` that need no mask for the rows from first_row on: they end before the last
  /// key and, when causal, before first_row's diagonal. The rest (the diagonal, a ragged last
  /// tile) are partial.
  template <int BLOCK_N>
  __device__ __forceinline__ kv_full_tiles full_tiles(int first_row, kv_tile_range r) const {
    int n_plain = kv_len() / BLOCK_N;
    if (CAUSAL) n_plain = min(n_plain, max(0, first_row + causal_offset + 1) / BLOCK_N);
    return {r.first, min(n_plain, r.end)};
  }
  /// The same for rows [first_row, last_row] under a window: a tile is full when every row sees
  /// all of it, from the last row's left edge to the first row's right edge.
  template <int BLOCK_N>
  __device__ __forceinline__ kv_full_tiles full_tiles(int first_row, int last_row, kv_tile_range r) const {
    if (!WINDOW) return full_tiles<BLOCK_N>(first_row, r);
    const int first = min(r.end, max(r.first, (key_begin(last_row) + BLOCK_N - 1) / BLOCK_N));
    return {first, max(first, min(r.end, key_end(first_row) / BLOCK_N))};
  }

  /// Whether tile j reaches past the last key: without a causal mask, the one partial tile (this
  /// test kept fa2's non-causal binaries as measured; full_tiles' bounds compile differently).
  template <int BLOCK_N>
  __device__ __forceinline__ bool past_keys(int j) const {
    return j * BLOCK_N + BLOCK_N > kv_len();
  }

  template <int BLOCK_N>
  __device__ __forceinline__ static tile_kind kind(int j, kv_tile_range r, kv_full_tiles f) {
    if (j < r.first || j >= r.end) return tile_kind::empty;
    return j >= f.full_first && j < f.full_end ? tile_kind::full : tile_kind::partial;
  }

  /// One query row's limit in a partial tile whose keys start at n0, from a thread's first column
  /// col0 of it on: hides(c) says whether that thread's column col0 + c is masked. c is a
  /// compile-time column in the callers' unrolled loops, so each test is one compare.
  struct row_limit {
    int visible;  ///< causal: keys this row sees, counted from the thread's first column
    int n0, col0, kv_len;  ///< not causal: the plain column test; WINDOW: n0 is the first visible column
    __device__ __forceinline__ bool hides(int c) const {
      // Measured on the H200: the first form is faster for causal tiles, the plain column test
      // for ragged-only ones.
      if constexpr (WINDOW) return c < n0 || c >= visible;
      else if constexpr (CAUSAL) return c >= visible;
      else return n0 + c + col0 >= kv_len;
    }
  };
  /// The rows' limits in partial tiles, with kv_len read where this is made (a softmax's call).
  /// row(row, n0, part): the limit of a thread that holds the row's columns from part * COLS on.
  struct row_masks {
    int kv_len, causal_offset;
    int left, right;  ///< WINDOW: the window's sides
    template <int COLS>
    __device__ __forceinline__ row_limit row(int row, int n0, int part) const {
      if constexpr (WINDOW) {
        const int col0 = n0 + part * COLS;  // the columns are counted from the thread's first
        return {window_key_end(row, causal_offset, right, kv_len) - col0,
                window_key_begin(row, causal_offset, left) - col0, 0, 0};
      } else if constexpr (CAUSAL) {
        return {min(kv_len, row + causal_offset + 1) - n0 - part * COLS, 0, 0, 0};
      } else {
        return {0, n0, part * COLS, kv_len};
      }
    }
  };
  __device__ __forceinline__ row_masks rows() const { return {kv_len(), causal_offset, left, right}; }
};

/// A mask's row limits for packed rows: packed row m is query row m / group (group: the packed
/// rows a query row takes, fa2's group or hopper's power-of-two slots; packed_mask).
template <class Masks>
struct packed_row_masks {
  Masks rows;
  int group;
  template <int COLS>
  __device__ __forceinline__ auto row(int m, int n0, int part) const {
    return rows.template row<COLS>(m / group, n0, part);
  }
};

/// A mask over packed rows (packed GQA: row m of a K/V head's tile is query row m / group, of head
/// slot m % group): the query mask's answers for the query rows they are. group is the packed rows
/// a query row takes: fa2's group (heads / kv_heads), or hopper's slots (the group padded to a
/// power of two, the slots past it padding rows). Rows at or past q_len * group are past the
/// queries (the query mask clamps them as rows past q_len).
template <class Mask>
struct packed_mask {
  Mask base;
  int group;
  using row_masks = packed_row_masks<typename Mask::row_masks>;
  __device__ __forceinline__ int q_len() const { return base.q_len(); }
  __device__ __forceinline__ int kv_len() const { return base.kv_len(); }
  /// Packed rows [m0, m0 + rows): query rows [m0 / group, (m0 + rows - 1) / group].
  __device__ __forceinline__ int keys_end(int m0, int rows) const {
    return base.keys_end(m0 / group, (m0 + rows - 1) / group - m0 / group + 1);
  }
  __device__ __forceinline__ int keys_begin(int m0) const { return base.keys_begin(m0 / group); }
  template <int ROWS, int BLOCK_N>
  __device__ __forceinline__ kv_tile_range range(int m0) const {
    const int end = (keys_end(m0, ROWS) + BLOCK_N - 1) / BLOCK_N;
    const int first = keys_begin(m0) / BLOCK_N;  // 0 but for a window
    return {first, max(end, first)};
  }
  template <int BLOCK_N>
  __device__ __forceinline__ kv_full_tiles full_tiles(int first_row, kv_tile_range r) const {
    return base.template full_tiles<BLOCK_N>(first_row / group, r);
  }
  template <int BLOCK_N>
  __device__ __forceinline__ kv_full_tiles full_tiles(int first_row, int last_row, kv_tile_range r) const {
    return base.template full_tiles<BLOCK_N>(first_row / group, last_row / group, r);
  }
  __device__ __forceinline__ row_masks rows() const { return {base.rows(), group}; }
};

/// A split-KV block's share of its row block's K/V tiles: split `split` of `splits` takes
/// ceil(count / splits) of them; the last share may be shorter, and shares past the tiles are empty.
__device__ __forceinline__ kv_tile_range split_share(kv_tile_range r, int split, int splits) {
  const int per = (r.count() + splits - 1) / splits;
  const int first = min(r.end, r.first + split * per);
  return {first, min(r.end, first + per)};
}

/// One online-softmax step over the two rows a thread holds of a 16-row tile of S in the NVIDIA
/// tensor cores' accumulator layout (mma.sync m16n8 and wgmma alike): for each 8-column chunk
/// nf, s(nf, 0..1) are row row0's columns 2t, 2t + 1 and s(nf, 2..3) row row0 + 8's (row0 = the
/// tile's row of lane / 4, t = lane % 4); the four lanes of a quad share the rows. Chunks
/// [0, NW / 8) take part (the tile's first NW keys); MASK: the tile is partial, and each row's
/// mask is applied in the step. Sets any_grow when either row's O needs rescaling by alpha.
template <int NW, bool MASK, bool SUM_PARTS_FIRST, class S, class Mask>
__device__ __forceinline__ void quad_rows_softmax(S&& s, const Mask& mask, int row0, int n0, int t,
                                                  float (&row_max)[2], float (&row_sum)[2], float (&alpha)[2],
                                                  bool& any_grow, float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    auto x = [&](int i) -> float& { return s(i / 2, h * 2 + i % 2); };
    auto quad_max_of = [](float m) {
      m = fmaxf(m, warp_xor(m, 1));
      return fmaxf(m, warp_xor(m, 2));
    };
    auto col = [](int i) { return i / 2 * 8 + i % 2; };
    if constexpr (MASK)
      online_softmax_step<NW / 4, 2, SUM_PARTS_FIRST>(x, quad_max_of, row_max[h], row_sum[h], alpha[h], any_grow,
                                                      scale_log2, col, mask.template row<2>(row0 + h * 8, n0, t));
    else
      online_softmax_step<NW / 4, 2, SUM_PARTS_FIRST>(x, quad_max_of, row_max[h], row_sum[h], alpha[h], any_grow,
                                                      scale_log2, col, no_limit{});
  }
}

}  // namespace attn_k
