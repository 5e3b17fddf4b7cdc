#pragma once
// The tile scheduler: which (query block, head, batch) a block works on. Tiles are numbered so
// that blocks running at the same time share K and V in L2: the (batch, head) pairs are cut into
// sections of heads_per_section (chosen on the host so their K and V fit in L2 together); within
// a section the query blocks are outermost, longest first when causal (the diagonal's tiles are
// the short ones), heads innermost. Block b takes tiles b, b + gridDim.x, ...: a persistent grid
// of one block per SM walks them all; a grid of one block per tile is the classic launch.
#include "common/hopper_params.cuh"

namespace attn_k {

struct tile_coord {
  int m_block, head, batch;
};

template <bool CAUSAL>
__device__ __forceinline__ tile_coord tile_at(const hopper_params& hp, int t) {
  const int per_section = hp.m_blocks * hp.heads_per_section;
  const int section = t / per_section, within = t - section * per_section;
  const int bh0 = section * hp.heads_per_section;
  const int heads = min(hp.heads_per_section, hp.batch_heads - bh0);  // the last section may be short
  const int m = within / heads, bh = bh0 + within % heads;
  return {CAUSAL ? hp.m_blocks - 1 - m : m, bh % hp.p.heads, bh / hp.p.heads};
}

}  // namespace attn_k
