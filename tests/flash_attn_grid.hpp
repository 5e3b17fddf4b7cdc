#pragma once
// FlashAttention's own forward test grid for issue 23's features, as attn-tune problems: the
// cases of tests/test_flash_attn.py's test_flash_attn_output and test_flash_attn_varlen_output in
// FlashAttention 2.x (batch 4, 9 query heads, bshd; MHA, GQA over 3 K/V heads and MQA; its ten
// (seqlen_q, seqlen_k) pairs; causal and not; local: each window side drawn in [0, seqlen_k), as
// its torch.randint; softcap 0 and 50; fp16 and bf16; packed: each sequence's lengths drawn in
// [max(1, L - 20), L], as its random padding masks), for each of its head dims. Dropout, ALiBi and
// an attention bias are not features of ours. The GPU suite runs every case
// (tests/gpu/test_flash_attn_suite_gpu.cpp); a CPU test checks that each is a valid problem that
// a family takes with a variant left after pruning.
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
                                                    {1024, 1023}, {2048, 2048}};

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

/// Calls f(problem) for each of the grid's 960 cases at head dim d, in a fixed order, with the
/// windows and lengths drawn from a generator seeded by d. A window's right side of 0 without
/// causal is the causal mask with a left side (FlashAttention's (left, 0)), given as causal.
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
                if (local) {
                  std::uniform_int_distribution<int64_t> side(0, sk - 1);
                  s.window_left = side(rng);
                  const int64_t right = side(rng);
                  if (!causal && right == 0) s.causal = true;
                  else if (!causal) s.window_right = right;
                }
                if (varlen) {
                  s.seqlens = flash_attn_padded_lengths(sq, rng);
                  s.kv_seqlens = flash_attn_padded_lengths(sk, rng);
                }
                f(s);
              }
}

}  // namespace attn::testing
