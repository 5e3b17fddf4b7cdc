#pragma once
// Split-KV's combine kernel body, shared by the families whose split blocks write partial O and
// LSE to the workspace (fa2 above FUSED_MERGE_SPLITS splits, hopper always).
#include "common/params.cuh"
#include "common/resources.cuh"
#include "common/split_merge.cuh"
#include "common/vendor.cuh"

namespace attn_k {

/// Split-KV's combine step: O and LSE of each row (b, h, i) from its splits' partial O and LSE
/// (common/split_merge.cuh). One block of COMBINE_THREADS per row: the first warp merges the LSEs
/// and leaves each split's weight in shared memory; then every thread sums weight * O_s over its
/// share of the splits for its columns, and the shares are added in shared memory. A row no split
/// saw a key of gets O = 0 and LSE = -inf. D: O's head dim (dv); OWN_DV: O has its own strides
/// (dv != d), else Q's.
template <bool BF16, int D, bool OWN_DV = false>
__device__ void combine_splits(const fwd_params& p) {
  constexpr int GROUPS = D >= COMBINE_THREADS ? 1 : COMBINE_THREADS / D;  // split shares per column
  __shared__ float weight[MAX_SPLITS];
  __shared__ float share[GROUPS][D];
  __shared__ float merged;
  wait_for_prior_grid();  // launched as the split kernel's dependent: its partials first
  const long long rows = (long long)p.batch * p.heads * p.q_len, row = blockIdx.x;
  auto lse_at = [&](int s) { return p.lse_partial[s * rows + row]; };
  if (threadIdx.x < 32) {
    auto warp_max = [](float x) {
#pragma unroll
      for (int o = 16; o > 0; o /= 2) x = fmaxf(x, warp_xor(x, o));
      return x;
    };
    auto warp_sum = [](float x) {
#pragma unroll
      for (int o = 16; o > 0; o /= 2) x += warp_xor(x, o);
      return x;
    };
    const float lse = merged_lse<32>(threadIdx.x, p.num_splits, lse_at, warp_max, warp_sum);
    for (int s = threadIdx.x; s < p.num_splits; s += 32) weight[s] = split_weight(lse_at(s), lse);
    if (threadIdx.x == 0) merged = lse;
  }
  __syncthreads();
  const float* o_part = p.o_partial + row * D;
  const long long split_stride = rows * D;
  for (int idx = threadIdx.x; idx < GROUPS * D; idx += COMBINE_THREADS) {
    const int d = idx % D, g = idx / D;
    float x = 0.f;
#pragma unroll 8
    for (int s = g; s < p.num_splits; s += GROUPS) x += weight[s] * o_part[s * split_stride + d];
    share[g][d] = x;
  }
  __syncthreads();
  const int i = row % p.q_len, h = (row / p.q_len) % p.heads, b = row / ((long long)p.q_len * p.heads);
  elem_bits* o = static_cast<elem_bits*>(p.o) + (OWN_DV ? b * p.o_batch_stride + h * p.o_head_stride + i * p.o_row_stride
                                                         : b * p.q_batch_stride + h * p.q_head_stride + i * p.q_row_stride);
  for (int d = threadIdx.x; d < D; d += COMBINE_THREADS) {
    float x = 0.f;
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) x += share[g][d];
    o[d] = from_float<BF16>(x);
  }
  if (threadIdx.x == 0) p.lse[row] = merged;
}

}  // namespace attn_k
