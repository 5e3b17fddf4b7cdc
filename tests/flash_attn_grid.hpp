#pragma once
// FlashAttention's own forward test grid for issue 23's features, as attn-tune problems: the union
// of the grids of tests/test_flash_attn.py's test_flash_attn_output and
// test_flash_attn_varlen_output across FlashAttention 2.x: batch 4, bshd; 9 query heads over 9
// (MHA), 3 (GQA) or 1 (MQA) K/V heads, as up to 2.5.9 (2.6 added softcap and went to 6 heads over
// 6, 2 or 1); head dims 32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256; its (seqlen_q,
// seqlen_k) pairs, with the varlen test's (1, 147); causal and not; local: each window side drawn in
// [0, seqlen_k), as its torch.randint, from our own seeded generator (not its values); softcap 0
// and 50; fp16 and bf16; packed: each sequence's lengths drawn in [max(1, L - 20), L], as its
// random padding masks, the first sequence L (the bound). Dropout, ALiBi and an attention bias are
// not features of ours. Rows that see no key: O is 0 in both; the LSE is -inf here, +inf in
// FlashAttention's kernel. The GPU suite runs every case (tests/gpu/test_flash_attn_suite_gpu.cpp);
// a CPU test checks that each is a valid problem that a family takes with a variant left after
// pruning, and the windows' mapping.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "codegen/family.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

namespace attn::testing {

inline constexpr int64_t flash_attn_head_dims[] = {32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256};
inline constexpr int64_t flash_attn_seqlens[][2] = {{113, 203}, {128, 217},   {113, 211},   {108, 256},
                                                    {256, 512}, {512, 256},   {1024, 1024}, {1023, 1024},
                                                    {1024, 1023}, {2048, 2048}, {1, 147}};

/// The suite's space for the family that runs a case: hopper's (one and two computing
/// warpgroups' worth of schedule: persistent, and persistent with the overlap and ping-pong) or
/// fa2's (64 and 128 query rows a block); 64 keys a tile, which every case keeps after pruning.
inline search_space flash_attn_suite_space(bool hopper) {
  return hopper ? parse_space({"block_m=128", "block_n=64", "warps=12", "stages=2", "schedule=4,7"},
                              hopper_family().default_space)
                : parse_space({"block_m=64,128", "block_n=64", "warps=4", "stages=2"}, fa2_family().default_space);
}

/// Four lengths drawn in [max(1, longest - 20), longest], the first the longest (the bound).
inline std::string flash_attn_padded_lengths(int64_t longest, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> len(std::max<int64_t>(1, longest - 20), longest);
  std::string out = std::to_string(longest);
  for (int b = 1; b < 4; ++b) out += "/" + std::to_string(len(rng));
  return out;
}

/// What FlashAttention is called with for a case: window_size (left, right; -1 no limit) and causal
/// (with which it takes right as 0).
struct flash_attn_window {
  int64_t left = -1, right = -1;
  bool causal = false;
};

/// Calls f(problem, window) for each of the grid's 1056 cases at head dim d, in a fixed order,
/// with the windows and lengths drawn from a generator seeded by d. A window's right side of 0
/// without causal is the causal mask with a left side (FlashAttention's (left, 0)), given as causal.
template <class F>
void for_each_flash_attn_case(int64_t d, F&& f) {
  std::mt19937 rng(static_cast<unsigned>(d));
  for (const auto& [sq, sk] : flash_attn_seqlens)
    for (bool varlen : {false, true})
      for (bool causal : {false, true})
        for (bool local : {false, true})
          for (double softcap : {0.0, 50.0})
            for (int64_t kv_heads : {9, 3, 1})
              for (dtype t : {dtype::fp16, dtype::bf16}) {
                problem s;
                s.batch = 4, s.heads = 9, s.kv_heads = kv_heads, s.q_len = sq, s.kv_len = sk, s.head_dim = d;
                s.causal = causal, s.dtype = t, s.layout = layout::bshd, s.softcap = softcap;
                flash_attn_window w{-1, -1, causal};
                if (local) {
                  std::uniform_int_distribution<int64_t> side(0, sk - 1);
                  w.left = side(rng), w.right = side(rng);
                  s.window_left = w.left;
                  if (!causal && w.right == 0) s.causal = true;
                  else if (!causal) s.window_right = w.right;
                }
                if (varlen) {
                  s.seqlens = flash_attn_padded_lengths(sq, rng);
                  s.kv_seqlens = flash_attn_padded_lengths(sk, rng);
                }
                f(s, w);
              }
}

/// The (query, key) pairs FlashAttention's mask leaves visible for sq queries and sk keys
/// (construct_local_mask, bottom-right aligned: query i sees key j when i + sk - sq - left <= j <=
/// i + sk - sq + right, right 0 when causal, a side of -1 unlimited).
inline double flash_attn_visible_pairs(int64_t sq, int64_t sk, const flash_attn_window& w) {
  const int64_t right = w.causal ? 0 : w.right;
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i) {
    const int64_t lo = w.left >= 0 ? std::max<int64_t>(0, i + sk - sq - w.left) : 0;
    const int64_t hi = right >= 0 ? std::min<int64_t>(sk - 1, i + sk - sq + right) : sk - 1;
    pairs += static_cast<double>(std::max<int64_t>(0, hi - lo + 1));
  }
  return pairs;
}

}  // namespace attn::testing
