#pragma once
// Split-KV's combine kernel body, shared by the families whose split blocks write partial O and
// LSE to the workspace (fa2 above FUSED_MERGE_SPLITS splits, hopper always).
#include "common/params.cuh"
#include "common/resources.cuh"
#include "common/split_merge.cuh"
#include "common/vendor.cuh"

namespace attn_k {

/// Split-KV's combine step: O and LSE of each row (b, h, i) from its splits' partial O and LSE
/// (common/split_merge.cuh). One block of COMBINE_THREADS per row. The row is a few microseconds
/// of dependent loads, so the loads go out together: each thread first loads its columns' partial
/// O of the first SPLIT_ROUND splits (of its share of the splits, GROUPS shares a column where D
/// is narrower than the block), then every warp merges the LSEs itself (no barrier; lane j then
/// holds the weight of split j of the round), and the weights are read across the warp while the
/// products are summed. Past SPLIT_ROUND splits, round after round. The shares of a column are
/// added in shared memory. A row no split saw a key of gets O = 0 and LSE = -inf. D: O's head dim
/// (dv); OWN_DV: O has its own strides (dv != d), else Q's.
template <bool BF16, int D, bool OWN_DV = false>
__device__ void combine_splits(const fwd_params& p) {
  constexpr int GROUPS = D >= COMBINE_THREADS ? 1 : COMBINE_THREADS / D;  // split shares per column
  constexpr int ITEMS = GROUPS * D;                                       // (column, share) pairs
  constexpr int PER = (ITEMS + COMBINE_THREADS - 1) / COMBINE_THREADS;    // pairs a thread
  constexpr int SPLIT_ROUND = 32;                                         // one weight a lane
  __shared__ float share[GROUPS][GROUPS > 1 ? D : 1];
  wait_for_prior_grid();  // launched as the split kernel's dependent: its partials first
  const long long rows = (long long)p.batch * p.heads * p.q_len, row = blockIdx.x;
  const int splits = p.num_splits, lane = threadIdx.x % 32;
  const float* o_part = p.o_partial + row * D;
  const long long split_stride = rows * D;
  float o[PER][SPLIT_ROUND];
  auto load_round = [&](int first) {
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int idx = threadIdx.x + k * COMBINE_THREADS, d = idx % D, g = idx / D;
#pragma unroll
      for (int j = 0; j < SPLIT_ROUND; ++j) {
        const int s = first + j;
        o[k][j] = idx < ITEMS && s < splits && s % GROUPS == g ? o_part[s * split_stride + d] : 0.f;
      }
    }
  };
  load_round(0);
  auto lse_at = [&](int s) { return p.lse_partial[s * rows + row]; };
  auto warp_max = [](float x) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) x = fmaxf(x, warp_xor(x, m));
    return x;
  };
  auto warp_sum = [](float x) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) x += warp_xor(x, m);
    return x;
  };
  const float lse = merged_lse<32>(lane, splits, lse_at, warp_max, warp_sum);
  float x[PER];
#pragma unroll
  for (int k = 0; k < PER; ++k) x[k] = 0.f;
  for (int first = 0; first < splits; first += SPLIT_ROUND) {
    if (first > 0) load_round(first);
    const float w = first + lane < splits ? split_weight(lse_at(first + lane), lse) : 0.f;
#pragma unroll
    for (int j = 0; j < SPLIT_ROUND; ++j) {
      const float wj = warp_read(w, j);
#pragma unroll
      for (int k = 0; k < PER; ++k) x[k] += wj * o[k][j];
    }
  }
  const int i = row % p.q_len, h = (row / p.q_len) % p.heads, b = row / ((long long)p.q_len * p.heads);
  const long long at = OWN_DV ? b * p.o_batch_stride + h * p.o_head_stride + i * p.o_row_stride
                              : b * p.q_batch_stride + h * p.q_head_stride + i * p.q_row_stride;
  elem_bits* out = static_cast<elem_bits*>(p.o) + at;
  if constexpr (GROUPS == 1) {
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (const int d = threadIdx.x + k * COMBINE_THREADS; d < D) out[d] = from_float<BF16>(x[k]);
  } else {  // one pair a thread (ITEMS <= COMBINE_THREADS): the shares of a column added in order
    if (threadIdx.x < ITEMS) share[threadIdx.x / D][threadIdx.x % D] = x[0];
    __syncthreads();
    if (threadIdx.x < D) {
      float sum = 0.f;
#pragma unroll
      for (int g = 0; g < GROUPS; ++g) sum += share[g][threadIdx.x];
      out[threadIdx.x] = from_float<BF16>(sum);
    }
  }
  if (threadIdx.x == 0) p.lse[row] = lse;
}

}  // namespace attn_k
