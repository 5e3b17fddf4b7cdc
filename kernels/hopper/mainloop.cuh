#pragma once
// A consumer warpgroup's work on one tile: its 64 query rows against the tile's K/V tiles, O in
// registers. With OVERLAP, S of tile j+1 is issued before P V of tile j and its softmax runs
// while that product is on the tensor cores (FlashAttention-3's intra-warpgroup pipelining);
// without it each tile is S, softmax, P V in order. With PINGPONG the warpgroups take turns to
// issue their products (named barriers, round robin), so one's softmax runs under the other's
// products. Each slot is handed back (one arrival per warpgroup) as soon as its product is done.
#include "common/attention.cuh"
#include "hopper/config.cuh"
#include "hopper/mma.cuh"
#include "hopper/softmax.cuh"

namespace attn_k {

/// Named barriers 1 .. CONSUMERS: warpgroup w issues after bar 1 + w, then opens the next's.
template <class C>
__device__ __forceinline__ void turn_wait(int wg) {
  if constexpr (C::PINGPONG) named_sync(1 + wg, 256);
}
template <class C>
__device__ __forceinline__ void turn_pass(int wg) {
  if constexpr (C::PINGPONG) named_arrive(1 + (wg + 1) % C::CONSUMERS, 256);
}

/// LENS, PAGED: zeroes rows [valid, BLOCK_N) of a V tile (real memory past a sequence's length:
/// 0 x NaN would be NaN in P V), then makes the zeros visible to the tensor cores for this
/// warpgroup (named barrier `bar`). Every warpgroup writes the same zeros to the shared tile (with
/// LENS beside two or three computing warpgroups one's stores may land while another's P V reads
/// the tile: zeros over zeros; a paged cache takes one computing warpgroup).
template <class C>
__device__ __forceinline__ void zero_v_rows(unsigned v, int valid, int bar) {
  constexpr int W = swizzle<C::DV>::W, PIECES = C::DV / (W / 2), CHUNKS = W / 16;
  const int rows = C::BLOCK_N - valid;
  for (int i = threadIdx.x % 128; i < rows * PIECES * CHUNKS; i += 128) {
    const int c = i % CHUNKS, r = valid + (i / CHUNKS) % rows, b = i / (CHUNKS * rows);
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(v + b * C::BLOCK_N * W + r * W + c * 16), "r"(0u)
                 : "memory");
  }
  fence_proxy_async();
  named_sync(bar, 128);
}

/// TRIM: K/V tiles kv_it .. kv_it + count - 1 that none of this warpgroup's rows see: it waits for
/// each one's K and V (so its arrivals count for that tile's use of the slot, not an earlier one's)
/// and hands both slots back, and keeps ping-pong's turns as mainloop would have taken them (one a
/// tile with the overlap, two without), so the other warpgroups' turns still come round.
template <class C>
__device__ __forceinline__ void skip_tiles(const hopper_smem<C>& sm, int kv_it, int count, int wg) {
  for (int j = 0; j < count; ++j) {
    const ring_pos r = ring_at<C::STAGES>(kv_it + j);
    mbar_wait(sm.k_full(r.stage), r.phase);
    mbar_wait(sm.v_full(r.stage), r.phase);
    if (threadIdx.x % 128 == 0) {
      mbar_arrive(sm.k_empty(r.stage));
      mbar_arrive(sm.v_empty(r.stage));
    }
    for (int turn = 0; turn < (C::OVERLAP ? 1 : 2); ++turn) {
      turn_wait<C>(wg);
      turn_pass<C>(wg);
    }
  }
}

template <class C>
struct tile_state {
  float acc[C::DV / 2];  ///< O: this thread's part of 64 rows x DV
  float row_max[2], row_sum[2];
};

/// A compile-time key count: which width a tile's products and softmax take, from key AT of the
/// tile on (HALF_FIRST: the second half, AT = BLOCK_N / 2; else 0).
template <int N, int AT = 0>
struct width_c {
  static constexpr int value = N, at = AT;
};

/// f(width_c<BLOCK_N / 2>) when `half` (and the config has HALF_LAST), else f(width_c<BLOCK_N>).
/// Each call holds complete issue-wait pairs of its wgmmas.
template <class C, class F>
__device__ __forceinline__ auto with_width(bool half, F&& f) {
  if constexpr (C::HALF_LAST) {
    if (half) return f(width_c<C::BLOCK_N / 2>{});
  }
  return f(width_c<C::BLOCK_N>{});
}

/// Runs K/V tiles first .. first + n - 1 (ring iterations kv_it .. kv_it + n - 1); those of
/// [plain.full_first, plain.full_end), counted from `first`, need no mask. q_wg: this warpgroup's
/// Q rows.
/// Q is handed back (q_empty) after the last S when O has its own tile; else the epilogue does it.
/// half_last: this warpgroup's rows see only the first half of the last tile's keys (the causal
/// diagonal, or a short last tile); with HALF_LAST its softmax and P V there take half the width
/// (and S too where it is not issued under a P V: a half S there serializes the wgmmas, C7511).
/// half_first (n >= 2): its rows see only the second half of the first tile's keys (a window's
/// left edge); with HALF_FIRST its S, softmax and P V there take that half.
template <class C>
__device__ __forceinline__ void mainloop(tile_state<C>& st, const hopper_params& hp, const hopper_smem<C>& sm,
                                         unsigned q_wg, unsigned q_empty, int kv_it, int first, int n,
                                         kv_full_tiles plain, bool half_last, bool half_first, int warp_row0,
                                         const hopper_mask<C>& mask, int wg) {
  const fwd_params& p = hp.p;
  const bool leader = threadIdx.x % 128 == 0;
  auto release = [&](unsigned bar) {
    if (leader) mbar_arrive(bar);
  };
  auto release_q_after = [&](int j) {  // S of tile j was the tile's last read of Q
    if (C::O_SMEM && j == n - 1) release(q_empty);
  };
#pragma unroll
  for (int i = 0; i < C::DV / 2; ++i) st.acc[i] = 0.f;
  st.row_max[0] = st.row_max[1] = neg_inf();
  st.row_sum[0] = st.row_sum[1] = 0.f;
  float s[C::BLOCK_N / 2], alpha[2];
  unsigned pr[C::BLOCK_N / 16][4];
  auto softmax = [&](int j, auto w) {
    constexpr int W = decltype(w)::value;
    if constexpr (C::SOFTCAP_POLY) {  // the cap and the softmax in one, where the warp's scores allow
      bool grow;
      // The test below, written out again: one shared lambda changed the binaries without the bit.
      const bool unmasked = (!C::WINDOW || j >= plain.full_first) && j < plain.full_end;
      if (unmasked && wg_softcap_poly<C, W>(s, alpha, st.row_max, st.row_sum, hp, grow)) return grow;
    }
    if constexpr (C::SOFTCAP) {  // cap the scores before the mask and the softmax see them
#pragma unroll
      for (int i = 0; i < W / 2; ++i) s[i] = p.softcap_out * fast_tanh(s[i] * p.softcap_in);
    }
    const typename hopper_mask<C>::row_masks rows = mask.rows();
    const int n0 = (first + j) * C::BLOCK_N + decltype(w)::at;
    if ((!C::WINDOW || j >= plain.full_first) && j < plain.full_end)
      return wg_softmax<C, false, W>(s, alpha, st.row_max, st.row_sum, n0, warp_row0, rows, p.scale_log2);
    return wg_softmax<C, true, W>(s, alpha, st.row_max, st.row_sum, n0, warp_row0, rows, p.scale_log2);
  };
  if (n == 0) return;
  // LENS, PAGED: tile j's V rows past the sequence's length are zeroed before its P V.
  auto fix_v = [&](int j, int stage) {
    if constexpr (C::LENS || C::PAGED) {
      const int valid = mask.kv_len() - (first + j) * C::BLOCK_N;
      if (valid < C::BLOCK_N) zero_v_rows<C>(sm.v(stage), max(valid, 0), 1 + C::CONSUMERS + wg);
    }
  };

  if constexpr (C::OVERLAP) {
    auto first_s = [&](auto w) {  // S of tile 0
      constexpr int W = decltype(w)::value;
      const ring_pos r = ring_at<C::STAGES>(kv_it);
      mbar_wait(sm.k_full(r.stage), r.phase);
      turn_wait<C>(wg);
      wg_issue_s<C, W>(s, q_wg, sm.k(r.stage) + decltype(w)::at * swizzle<C::D>::W);
      turn_pass<C>(wg);
      wg_wait<0>();
      wg_fence_operand(s);
      release(sm.k_empty(r.stage));
      release_q_after(0);
      softmax(0, w);
      wg_pack_p<C, W>(pr, s);
    };
    constexpr width_c<C::BLOCK_N> whole{};
    using second_half = width_c<C::BLOCK_N / 2, C::BLOCK_N / 2>;
    bool first_done = false;
    if constexpr (C::HALF_FIRST) {
      if (half_first) first_s(second_half{});
      first_done = half_first;
    }
    if (!first_done) with_width<C>(half_last && n == 1, first_s);
    // S of tile j + 1 (W keys) under P V of tile j (a whole tile). The last P V is peeled off, so
    // no branch sits between a wgmma's issue and its wait (ptxas serializes all wgmmas when one
    // path might read an accumulator in flight: warning C7514).
    // w: tile j + 1's softmax width; pw: tile j's P V (whole, or HALF_FIRST's second half).
    auto step = [&](int j, auto w, auto pw) {
      constexpr int W = decltype(w)::value;
      const ring_pos rk = ring_at<C::STAGES>(kv_it + j + 1), rv = ring_at<C::STAGES>(kv_it + j);
      mbar_wait(sm.k_full(rk.stage), rk.phase);
      mbar_wait(sm.v_full(rv.stage), rv.phase);
      fix_v(j, rv.stage);
      turn_wait<C>(wg);
      wg_issue_s<C>(s, q_wg, sm.k(rk.stage));  // whole: a half S here serialized the wgmmas (C7511)
      wg_issue_pv<C, decltype(pw)::value>(st.acc, pr, sm.v(rv.stage) + decltype(pw)::at * swizzle<C::DV>::W);
      turn_pass<C>(wg);
      wg_wait<1>();
      wg_fence_operand(s);
      release(sm.k_empty(rk.stage));
      release_q_after(j + 1);
      const bool grow = softmax(j + 1, w);
      wg_wait<0>();
      wg_fence_operand(st.acc);
      release(sm.v_empty(rv.stage));
      if (grow) wg_rescale<C>(st.acc, alpha);
      wg_pack_p<C, W>(pr, s);
    };
    const bool half_step = C::HALF_LAST && half_last && n >= 2;  // the last tile's softmax on half
    int j0 = 0;  // the steps before j0 are done
    if constexpr (C::HALF_FIRST) {
      if (half_first) {  // tile 0's P V over its second half (n >= 2)
        if (half_step && n == 2) step(0, width_c<C::BLOCK_N / 2>{}, second_half{});
        else step(0, whole, second_half{});
        j0 = 1;
      }
    }
    for (int j = j0; j + 1 < n - (half_step ? 1 : 0); ++j) step(j, whole, whole);
    if constexpr (C::HALF_LAST) {
      if (half_step && n - 2 >= j0) step(n - 2, width_c<C::BLOCK_N / 2>{}, whole);
    }
    with_width<C>(half_last, [&](auto w) {
      constexpr int W = decltype(w)::value;
      const ring_pos rv = ring_at<C::STAGES>(kv_it + n - 1);
      mbar_wait(sm.v_full(rv.stage), rv.phase);
      fix_v(n - 1, rv.stage);
      wg_issue_pv<C, W>(st.acc, pr, sm.v(rv.stage));
      wg_wait<0>();
      wg_fence_operand(st.acc);
      release(sm.v_empty(rv.stage));
    });
  } else {
    auto tile = [&](int j, auto w) {
      constexpr int W = decltype(w)::value;
      const ring_pos r = ring_at<C::STAGES>(kv_it + j);
      mbar_wait(sm.k_full(r.stage), r.phase);
      turn_wait<C>(wg);
      wg_issue_s<C>(s, q_wg, sm.k(r.stage));  // whole: see mainloop's note
      turn_pass<C>(wg);
      wg_wait<0>();
      wg_fence_operand(s);
      release(sm.k_empty(r.stage));
      release_q_after(j);
      const bool grow = softmax(j, w);
      if (grow) wg_rescale<C>(st.acc, alpha);
      wg_pack_p<C, W>(pr, s);
      mbar_wait(sm.v_full(r.stage), r.phase);
      fix_v(j, r.stage);
      turn_wait<C>(wg);
      wg_issue_pv<C, W>(st.acc, pr, sm.v(r.stage));
      turn_pass<C>(wg);
      wg_wait<0>();
      wg_fence_operand(st.acc);
      release(sm.v_empty(r.stage));
    };
    const bool half_tile = C::HALF_LAST && half_last;  // the last tile over half its width
    for (int j = 0; j < n - (half_tile ? 1 : 0); ++j) tile(j, width_c<C::BLOCK_N>{});
    if constexpr (C::HALF_LAST) {
      if (half_tile) tile(n - 1, width_c<C::BLOCK_N / 2>{});
    }
  }
}

}  // namespace attn_k
