// The hopper family: kernels/hopper.cuh, FlashAttention-3's forward (TMA, warp-specialized
// pipeline, ping-pong, persistent tile scheduler), sm_90a only. Its knob is the schedule, the OR
// of kernels/common/resources.cuh's bits (the `_k<N>` of a config's name): 1 = intra-warpgroup
// overlap, 2 = ping-pong, 4 = persistent grid, 8 = two Q tiles, 16 = half-width last tile, 32 =
// two blocks an SM (one computing warpgroup).
#include <algorithm>
#include <climits>
#include <span>

#include <fmt/format.h>

#include "backend/runtime.hpp"
#include "backend/tensor_map.hpp"
#include "codegen/family.hpp"
#include "codegen/family_hopper.hpp"
#include "codegen/family_parts.hpp"
#include "codegen/kernel_args.hpp"
#include "codegen/launch_plan.hpp"
#include "common/hopper_params.cuh"  // kernels/common, shared with the device code
#include "common/resources.cuh"      // kernels/common, shared with the device code

namespace attn {

int hopper_blocks_per_sm(const tile_config& c) { return attn_k::schedule_blocks_per_sm(c.knob); }

namespace {

constexpr int64_t sm90_shared_memory = 227 * 1024;  // the opt-in maximum of every sm_90 part
using attn_k::schedule_half_last;
using attn_k::schedule_overlap;
using attn_k::schedule_persistent;
using attn_k::schedule_pingpong;
using attn_k::schedule_two_q;

int consumers(const tile_config& c) { return c.block_m / 64; }
/// The tiles' widths: Q's and K's head dim, and V's and O's, each padded to 16 (a head dim of 8s
/// is read through TMA as its padded tile, the columns past it zeros).
int tile_d(const problem& s) { return attn_k::mma_head_dim(static_cast<int>(s.head_dim)); }
int tile_dv(const problem& s) { return attn_k::mma_head_dim(static_cast<int>(value_dim(s))); }
int hopper_threads(const tile_config& c) { return c.warps * 32; }

// hopper_config's layout (common/resources.cuh): one or two Q tiles (and O, when it fits beside
// them) and STAGES K and V tiles (V and O dv wide), unpadded and swizzled, then the mbarriers,
// 1024 bytes to align.
int64_t tiles_bytes(const tile_config& c, const problem& s, bool o_smem) {
  const int q_tiles = (c.knob & schedule_two_q) ? 2 : 1;
  return attn_k::hopper_layout{c.block_m,
                               c.block_n,
                               c.stages,
                               tile_d(s),
                               static_cast<int>(element_size(s.dtype)),
                               q_tiles,
                               o_smem,
                               has_value_dim(s) ? tile_dv(s) : 0}
      .shared_bytes();
}
/// O gets its own tile when that still fits: the next tile's Q then loads during this epilogue.
// A block's share of an SM's shared memory: all of the opt-in maximum, or with two blocks an SM
// (schedule bit 32) half of the SM's (the maximum plus 1 KiB) less the 1 KiB each block reserves.
int64_t hopper_shared_memory_cap(const tile_config& c, int64_t per_block = sm90_shared_memory) {
  return hopper_blocks_per_sm(c) == 2 ? per_block / 2 - 512 : per_block;
}
// O gets a tile of its own where it fits beside the rest (else it is staged in Q's).
bool o_has_own_tile(const tile_config& c, const problem& s) {
  return tiles_bytes(c, s, true) <= hopper_shared_memory_cap(c);
}
int64_t hopper_shared_memory(const tile_config& c, const problem& s) {
  return tiles_bytes(c, s, o_has_own_tile(c, s));
}

// Registers a computing thread needs beyond its tile state (addresses, loop state, the causal
// mask): with these margins ptxas reported 0 spills for every config the rule keeps, and spills for
// the ones next past it (e.g. D=128 192x80 causal with the overlap: 20 bytes). A window's mask
// costs what the causal one does (D=128 128x192 with both sides, margin 16: 28-60 bytes). Softcap's
// tanh costs three computing warpgroups (160 registers each) 20 more (at 0 more: D=64 192x128 with
// the overlap, slack 8: 108 bytes; D=128 192x80, slack 4: 32-68). Two (240 each) spill erratically
// at block_n >= 176 (D=96 128x176, slack 32: 24-80 bytes; D=128 128x192, slack 0: 112, or none
// without the overlap) and not below (D=256 128x64, slack 8; 128x80, slack 4): 36 more there, 4
// below. So ptxas reported no spills for any of the 1406 configs this keeps of the default spaces
// at D = 64 .. 256 with softcap, causal or not, with and without a window.
//
// A packed batch's consumers hold their sequence's first row and lengths in registers, which the
// dense kernel reads from its parameters: with the margins above, two computing warpgroups
// spilled at a slack of 12 or less over 2 stages (D=128 128x176 with the overlap: 8-296 bytes;
// D=256 128x64 and 128x80: 16-168) and of 16 or less over 3 (D=96 128x176: 128-156; D=80 128x192
// with two Q tiles: 236), three with two Q tiles at 16 or less (D=128 192x64: 24-80), none
// otherwise. 16 more for two (36 over 3 stages), 24 for three with two Q tiles: the varlen default
// spaces at D 64, 80, 96, 128, 192 and 256 then compile without spills.
int register_margin(const tile_config& c, const problem& s) {
  const int softcap = !has_softcap(s) ? 0 : consumers(c) >= 3 ? 20 : c.block_n >= 176 ? 36 : 4;
  // Softcap's polynomial (bit 64) beside two computing warpgroups: with V13's code D=256 causal's
  // 128x64 spilled 32 bytes at slack 4 (its non-causal form none at 12); V14's (degree 3 or 5)
  // compiles it without spills at no margin of its own (causal or not, with a window), D=256
  // 128x80 not (not causal: 62 bytes at no slack): 4, which keeps 128x64 and prunes 128x80.
  const int poly = (c.knob & attn_k::schedule_softcap_poly) && consumers(c) < 3 ? 4 : 0;
  // Trimmed warpgroups (bit 128): D=128 causal 128x176 spilled 8 bytes at slack 4.
  const int trim = (c.knob & attn_k::schedule_trim) ? 8 : 0;
  const int packed = !is_varlen(s)         ? 0
                     : consumers(c) < 3    ? (c.stages >= 3 ? 36 : 16)
                     : (c.knob & schedule_two_q) ? 24
                                                 : 0;
  return (s.causal || has_window(s) ? 24 : 16) + softcap + poly + trim + packed;
}

}  // namespace

int64_t hopper_rows(const problem& s, int pack_gqa) {
  return pack_gqa ? s.q_len * pack_slots(s.heads / s.kv_heads) : s.q_len;
}

std::optional<std::string> tile_count_problem(const problem& s, int block_m, int pack_gqa, int splits) {
  const int64_t m_blocks = (hopper_rows(s, pack_gqa) + block_m - 1) / block_m;
  const int64_t tiles = m_blocks * s.batch * decode_heads(s, pack_gqa) * splits;
  if (tiles > INT_MAX)
    return fmt::format("{} tiles ({} query blocks of {} rows x {} batch entries x {} heads{}) exceed 2^31", tiles,
                       m_blocks, block_m, s.batch, decode_heads(s, pack_gqa),
                       splits > 1 ? fmt::format(" x {} splits", splits) : "");
  return std::nullopt;
}

hopper_schedule schedule_for(const problem& s, int block_m, int64_t l2_bytes, int sm_count, bool persistent,
                             int pack_gqa, int splits) {
  if (auto why = tile_count_problem(s, block_m, pack_gqa, splits)) throw invalid_input(*why);
  hopper_schedule h;
  h.m_blocks = static_cast<int>((hopper_rows(s, pack_gqa) + block_m - 1) / block_m);
  h.batch_heads = static_cast<int>(s.batch * decode_heads(s, pack_gqa));
  // K and V of one query head (heads sharing a kv head share its K and V; packed, a tile's head
  // is a K/V head): half of L2 holds a section's, so the blocks running together find them there.
  const int64_t group = pack_gqa ? 1 : s.heads / s.kv_heads;
  const int64_t per_head =
      std::max<int64_t>(1, s.kv_len * (s.head_dim + value_dim(s)) * element_size(s.dtype) / group);
  h.heads_per_section =
      static_cast<int>(std::clamp<int64_t>(l2_bytes / 2 / per_head, 1, std::max<int64_t>(1, h.batch_heads)));
  h.tiles = h.m_blocks * h.batch_heads * std::max(1, splits);
  h.grid = persistent ? std::min(h.tiles, std::max(1, sm_count)) : h.tiles;
  return h;
}

namespace {

/// The tensor map of one of Q, K, V, O (`width` columns: the head dim, V's and O's dv): a packed
/// batch's rows are one batch entry of `rows` rows (its batch stride, 0, stands in as the span of
/// the whole tensor).
tensor_map_args map_for(const void* base, const problem& s, int64_t width, int64_t rows, int64_t heads,
                        int64_t row_stride, int64_t head_stride, int64_t batch_stride, int box_rows) {
  const bool packed = is_varlen(s);
  const int64_t span = std::max(rows * row_stride, heads * head_stride);
  return tensor_map_for(base, s.dtype == dtype::bf16, width, rows, heads, packed ? 1 : s.batch, row_stride,
                        head_stride, packed ? span : batch_stride, box_rows);
}

}  // namespace

std::optional<std::string> tma_stride_problem(const problem& s) {
  // A packed batch's rows: their totals; with lengths "given" (they come with the call) the
  // longest sequence's, a bound below the totals (the launch checks the maps of the call's rows).
  const bool packed = is_varlen(s), given = packed && s.seqlens == "given";
  const int64_t q_reach = packed && !given ? q_rows(s) : s.q_len;
  const int64_t kv_reach = packed && !given ? kv_rows(s) : s.kv_len;
  // Q and K, then (dv != d: their own rows of dv) O and V; with dv = d O is Q's and V is K's.
  const bool own = has_value_dim(s);
  struct map_check {
    const char* name;
    bool kv;
    int64_t width;
  };
  const map_check checks[] = {{own ? "Q" : "Q/O", false, s.head_dim}, {own ? "K" : "K/V", true, s.head_dim},
                              {"O", false, value_dim(s)}, {"V", true, value_dim(s)}};
  for (const map_check& m : own ? std::span(checks) : std::span(checks).first(2)) {
    const int64_t reach = m.kv ? kv_reach : q_reach;
    const tensor_strides t =
        packed ? packed_strides(s, m.kv, m.width, reach) : contiguous_strides(s, m.kv, m.width);
    if (auto why = tensor_map_problem(
            map_for(nullptr, s, m.width, reach, m.kv ? s.kv_heads : s.heads, t.row, t.head, t.batch, 64)))
      return fmt::format("{}: {}", m.name, *why);
  }
  return std::nullopt;
}

int hopper_consumer_registers(const tile_config& c) {
  return attn_k::consumer_registers(hopper_threads(c), consumers(c), attn_k::hopper_producer_registers(consumers(c)),
                                    hopper_blocks_per_sm(c));
}

int hopper_state_registers(const tile_config& c, const problem& s) {
  // O (64 x D fp32 over 128 threads: D / 2) and what goes with it (its rescale, V's descriptors),
  // S (64 x BLOCK_N: BLOCK_N / 2) and P (packed: BLOCK_N / 4), live together with the overlap
  // (the next tile's S beside this tile's P); without it P replaces S. Weights fitted to ptxas's
  // reports (sm_90a, CUDA 13.0) of block_m {128, 192} x block_n {64 .. 192} x D {64, 128, 256}.
  // With dv != d, O is dv / 2 and the rest an eighth of the wider head dim (5 D / 8 when dv = d);
  // head dims of 8s count their tiles' widths (padded to 16).
  const bool overlap = (c.knob & schedule_overlap) != 0;
  const int o_part = tile_dv(s) / 2 + std::max(tile_d(s), tile_dv(s)) / 8;
  return o_part + (overlap ? 3 * c.block_n / 4 : c.block_n / 2);
}

namespace {

std::optional<std::string> hopper_reject(const tile_config& c, const problem& s, const resource_limits& limits) {
  if (limits.cc_major != 9 || limits.cc_minor != 0) return std::string("hopper needs sm_90a (Hopper)");
  if (c.block_m % 64 != 0 || c.block_m > 256 || c.warps != c.block_m / 16 + 4)
    return fmt::format("block_m {} over {} warps is not 64 rows per computing warpgroup (up to 4) plus a "
                       "producer warpgroup", c.block_m, c.warps);
  if (c.block_n % 16 != 0 || c.block_n > 256)
    return fmt::format("block_n {} is not a multiple of 16 up to 256", c.block_n);
  if (c.stages < 2 || c.stages > 8) return fmt::format("stages {} not in [2, 8]", c.stages);
  if (c.knob < 0 || c.knob > attn_k::schedule_all)
    return fmt::format("schedule {} not in [0, {}]", c.knob, static_cast<int>(attn_k::schedule_all));
  if (c.knob & schedule_half_last) {
    if (c.block_n % 32 != 0)
      return fmt::format("half-width last tile (schedule bit 16) needs block_n a multiple of 32, not {}",
                         c.block_n);
    // It acts only where some warpgroup's rows see at most half of their last K/V tile: always on
    // a diagonal (causal, or a window's right edge: a warpgroup's 64 rows span half a tile of 128
    // or more keys), else only when N_kv leaves a short last tile.
    // A packed batch's sequences each have their own last tile.
    const bool diagonal = s.causal || s.window_right >= 0;
    const int64_t tail = s.kv_len % c.block_n;
    if (!diagonal && !is_varlen(s) && (tail == 0 || tail > c.block_n / 2))
      return fmt::format("half-width last tile (schedule bit 16) has nothing to act on: not causal, and "
                         "N_kv {} leaves no last tile of at most {} keys",
                         s.kv_len, c.block_n / 2);
    if (diagonal && c.block_n < 128)
      return fmt::format("half-width last tile (schedule bit 16) needs block_n >= 128 when causal (64 rows "
                         "of a warpgroup see more than half of a {}-key diagonal tile)",
                         c.block_n);
  }
  if (c.knob & attn_k::schedule_softcap_poly) {
    if (!has_softcap(s))
      return std::string("softcap's polynomial tanh (schedule bit 64) has nothing to act on: no softcap (--softcap C)");
    // Its row reference (the cap of the largest |s|) may sit up to 2^92 above a row's max: P then
    // underflows fp16 (2^-24), not bf16 (2^-126).
    if (s.dtype == dtype::fp16)
      return std::string("softcap's polynomial tanh (schedule bit 64) takes bf16 only: its P can fall below fp16's range");
  }
  if (c.knob & attn_k::schedule_trim) {
    if (consumers(c) < 2)
      return fmt::format("trimmed warpgroups (schedule bit 128) need two computing warpgroups or more, block_m {} has one",
                         c.block_m);
    if (!s.causal && !has_window(s))
      return std::string("trimmed warpgroups (schedule bit 128) have nothing to act on: no causal mask or window");
  }
  if (c.knob & attn_k::schedule_half_first) {
    if (!(c.knob & schedule_overlap))
      return std::string("half-width first tile (schedule bit 256) needs the overlap (schedule bit 1)");
    if (c.block_n % 32 != 0)
      return fmt::format("half-width first tile (schedule bit 256) needs block_n a multiple of 32, not {}", c.block_n);
    if (!has_window(s) || s.window_left < 0)
      return std::string("half-width first tile (schedule bit 256) has nothing to act on: no window's left edge "
                         "(--window LEFT,RIGHT with LEFT >= 0)");
  }
  if ((c.knob & schedule_pingpong) && consumers(c) < 2)
    return fmt::format("ping-pong needs two computing warpgroups, block_m {} has one", c.block_m);
  if (hopper_blocks_per_sm(c) == 2 && consumers(c) != 1)
    return fmt::format("two blocks an SM (schedule bit 32) needs one computing warpgroup (block_m 64), block_m {} "
                       "has {}", c.block_m, consumers(c));
  if (hopper_blocks_per_sm(c) == 2 && s.page_size > 0)  // its producer keeps 96 registers: not modelled
    return std::string("two blocks an SM (schedule bit 32) does not take a paged cache yet");
  const int budget = hopper_consumer_registers(c) - register_margin(c, s);
  if (const int regs = hopper_state_registers(c, s); regs > budget)
    return fmt::format("O, S and P need {} registers per thread, over the {} a computing thread gets (less {})",
                       regs, hopper_consumer_registers(c), register_margin(c, s));
  if (hopper_threads(c) > limits.max_threads_per_block)
    return fmt::format("{} threads exceed the device's {} per block", hopper_threads(c),
                       limits.max_threads_per_block);
  const int64_t bytes = hopper_shared_memory(c, s), cap = hopper_shared_memory_cap(c, limits.shared_memory_per_block);
  if (bytes > limits.shared_memory_per_block)
    return fmt::format("shared memory {} KiB exceeds the device's {} KiB per block", (bytes + 1023) / 1024,
                       limits.shared_memory_per_block / 1024);
  if (bytes > cap)  // two blocks an SM: each its half
    return fmt::format("two blocks an SM (schedule bit 32): shared memory {} KiB a block exceeds half the SM's, {} KiB",
                       (bytes + 1023) / 1024, cap / 1024);
  // O staged in Q's tile: each warpgroup writes its O rows where its own Q rows are only when both
  // tiles have one swizzle width (else its O pieces land on another warpgroup's Q rows while that
  // warpgroup may still be reading them).
  if (has_value_dim(s) && !o_has_own_tile(c, s) && swizzle_bytes_for(tile_d(s)) != swizzle_bytes_for(tile_dv(s)))
    return fmt::format("O (dv {}) does not fit a tile of its own, and staged in Q's (d {}) its {}-byte swizzle "
                       "would put a warpgroup's O rows on another's Q rows ({}-byte swizzle)",
                       value_dim(s), s.head_dim, swizzle_bytes_for(tile_dv(s)), swizzle_bytes_for(tile_d(s)));
  if (c.splits < 1 || c.splits > attn_k::MAX_SPLITS)
    return fmt::format("splits {} not in [1, {}]", c.splits, attn_k::MAX_SPLITS);
  if (c.pack_gqa != 0 && c.pack_gqa != 1) return fmt::format("pack_gqa {} is not 0 or 1", c.pack_gqa);
  if (c.pack_gqa) {
    const int64_t group = s.heads / s.kv_heads;
    if (group == 1) return std::string("pack_gqa 1 needs fewer K/V heads than query heads (GQA/MQA)");
    // Q's and O's boxes hold whole groups: 64 rows (a warpgroup's O) of its power-of-two slots each.
    if (pack_slots(group) > 64)
      return fmt::format("pack_gqa 1 needs a group (heads / kv_heads = {}) of at most 64 heads (a warpgroup's "
                         "rows); fa2 packs any group",
                         group);
  }
  if (s.page_size > 0) {
    // A K/V tile is copied in boxes of min(page size, block_n) rows, each whole swizzle atoms of
    // 8 rows and at most block_n / 16 of them.
    if (s.page_size < 16)
      return fmt::format("hopper reads a paged cache in TMA boxes of 16 rows or more: page size {} is below 16 "
                         "(fa2 takes every page size)",
                         s.page_size);
    if (consumers(c) > 1)
      return fmt::format("a paged cache takes one computing warpgroup (block_m 64, not {}): beside two or three "
                         "the producer's 24-32 registers spill its page lookups",
                         c.block_m);
    // A tile is whole pages, or a whole part of one page (a box never crosses a page's end).
    if (s.page_size < c.block_n ? c.block_n % s.page_size != 0 : s.page_size % c.block_n != 0)
      return fmt::format("block_n {} is not a whole number of pages of {} rows, nor a whole part of one", c.block_n,
                         s.page_size);
  }
  if (is_varlen(s) && (c.splits > 1 || c.pack_gqa))
    return fmt::format("a packed batch (seqlens) has no {}", c.splits > 1 ? "split-KV" : "packed GQA");
  if (auto why = tma_stride_problem(s)) return why;
  if (auto why = tile_count_problem(s, c.block_m, c.pack_gqa, c.splits)) return why;
  return std::nullopt;
}

// The template's WINDOW, SOFTCAP, VARLEN, DV, PACK, SPLIT, LENS and PAGED, as far as one is set: a dense
// instantiation names none, so its source and binary stay those measured before they existed.
std::string variant_flags(const tile_config& c, const problem& s) {
  const bool lens = has_kv_lens(s), paged = s.page_size > 0;
  if (c.pack_gqa || c.splits > 1 || lens || paged)
    return fmt::format(", {}, {}, {}, {}, {}, {}{}", has_window(s), has_softcap(s), is_varlen(s),
                       has_value_dim(s) ? value_dim(s) : 0, c.pack_gqa != 0, c.splits > 1,
                       lens || paged ? fmt::format(", {}, {}", lens, paged) : "");
  if (has_value_dim(s))
    return fmt::format(", {}, {}, {}, {}", has_window(s), has_softcap(s), is_varlen(s), value_dim(s));
  if (is_varlen(s)) return fmt::format(", {}, {}, true", has_window(s), has_softcap(s));
  if (has_softcap(s)) return fmt::format(", {}, true", has_window(s));
  return has_window(s) ? ", true" : "";
}

std::string hopper_instantiation(const tile_config& c, const problem& s) {
  // setmaxnreg needs a register cap at entry: __launch_bounds__(threads, blocks an SM: 1, or 2 with
  // schedule bit 32). The persistent bit only changes the grid, so it does not reach the source.
  std::string text = fmt::format(
      "#include \"hopper.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__({threads}, {blocks}) attn_hopper("
      "const __grid_constant__ attn_k::hopper_params hp) {{\n"
      "  attn_k::hopper_forward<attn_k::hopper_config<{bf16}, {d}, {bm}, {bn}, {w}, {st}, {causal}, {sched}, "
      "{o_smem}{variant}>>(hp);\n"
      "}}\n",
      fmt::arg("threads", hopper_threads(c)), fmt::arg("blocks", hopper_blocks_per_sm(c)),
      fmt::arg("bf16", s.dtype == dtype::bf16), fmt::arg("d", s.head_dim),
      fmt::arg("bm", c.block_m), fmt::arg("bn", c.block_n), fmt::arg("w", c.warps), fmt::arg("st", c.stages),
      fmt::arg("causal", s.causal), fmt::arg("sched", c.knob & attn_k::schedule_kernel_bits),
      fmt::arg("o_smem", o_has_own_tile(c, s)), fmt::arg("variant", variant_flags(c, s)));
  if (c.splits > 1)  // split-KV's combine kernel (common/combine.cuh): one binary serves every split count
    text += combine_stub("attn_hopper_combine", "const __grid_constant__ attn_k::hopper_params hp", "hp.p", s, true);
  return text;
}

// The tensor maps are encoded once per (variant, problem): boxes of BLOCK_M rows of Q, BLOCK_N
// of K and V, and 64 of O (each computing warpgroup stores its own rows).
void hopper_plan(launch_plan& plan, const tile_config& c, const problem& s, const attn_k::fwd_params& params,
                 const gpu_info& gpu) {
  auto hp = std::make_shared<attn_k::hopper_params>();
  hp->p = params;
  const attn_k::fwd_params& p = hp->p;
  const softcap_polynomial poly = softcap_poly_for(s.softcap, p.softmax_scale);  // schedule bit 64's tanh; 0s without softcap
  std::copy(std::begin(poly.coefficients), std::end(poly.coefficients), hp->softcap_poly);
  hp->softcap_fast_limit = poly.limit;
  std::copy(std::begin(poly.coefficients3), std::end(poly.coefficients3), hp->softcap_poly3);
  hp->softcap_fast3_limit = poly.limit3;
  const device_runtime& rt = runtime_of(gpu);
  auto encode = [&](attn_k::tensor_map& map, const tensor_map_args& a) {
    if (auto why = tensor_map_problem(a)) throw invalid_input(*why);
    rt.encode_tensor_map(a, &map);
  };
  // A packed batch: every row of the packed tensors (a tile past its sequence reads the next's
  // rows, masked, or past the last row zeros).
  const bool packed = is_varlen(s);
  const int64_t q_reach = packed ? p.total_q : s.q_len, k_reach = packed ? p.total_k : s.kv_len;
  // V and O: their own width and strides (the host always sets them; K's and Q's when dv = d).
  const int64_t d = s.head_dim, dv = value_dim(s);
  const bool bf16 = s.dtype == dtype::bf16;
  const int64_t group = s.heads / s.kv_heads;
  if (c.pack_gqa)  // {column, head in the group, row, K/V head, batch}: boxes of whole groups
    encode(hp->q_map, packed_tensor_map_for(p.q, bf16, d, s.q_len, s.heads, group, s.batch, p.q_row_stride,
                                            p.q_head_stride, p.q_batch_stride, c.block_m));
  else
    encode(hp->q_map, map_for(p.q, s, d, q_reach, s.heads, p.q_row_stride, p.q_head_stride, p.q_batch_stride, c.block_m));
  if (s.page_size > 0) {  // [pages, page_size, kv_heads, D] (p.total_k: the pages), boxes of a page's rows
    const int box = static_cast<int>(std::min<int64_t>(s.page_size, c.block_n));
    encode(hp->k_map, tensor_map_for(p.k, bf16, d, s.page_size, s.kv_heads, p.total_k, p.kv_row_stride,
                                     p.kv_head_stride, p.kv_batch_stride, box));
    encode(hp->v_map, tensor_map_for(p.v, bf16, dv, s.page_size, s.kv_heads, p.total_k, p.v_row_stride,
                                     p.v_head_stride, p.v_batch_stride, box));
  } else {
    encode(hp->k_map,
           map_for(p.k, s, d, k_reach, s.kv_heads, p.kv_row_stride, p.kv_head_stride, p.kv_batch_stride, c.block_n));
    encode(hp->v_map,
           map_for(p.v, s, dv, k_reach, s.kv_heads, p.v_row_stride, p.v_head_stride, p.v_batch_stride, c.block_n));
  }
  if (c.pack_gqa)
    encode(hp->o_map, packed_tensor_map_for(p.o, bf16, dv, s.q_len, s.heads, group, s.batch, p.o_row_stride,
                                            p.o_head_stride, p.o_batch_stride, 64));
  else
    encode(hp->o_map, map_for(p.o, s, dv, q_reach, s.heads, p.o_row_stride, p.o_head_stride, p.o_batch_stride, 64));
  const hopper_schedule sched = schedule_for(s, c.block_m, gpu.l2_bytes, gpu.desc.sm_count * hopper_blocks_per_sm(c),
                                             (c.knob & schedule_persistent) != 0, c.pack_gqa, c.splits);
  // Split-KV: the splits' partial O and LSE in the workspace (after the counters fa2 uses), merged
  // by the combine kernel after (one block of COMBINE_THREADS per output row).
  hp->p.num_splits = c.splits;
  if (c.splits <= 1) plan.combine = nullptr;
  if (c.splits > 1) {
    point_split_workspace(hp->p, s, c.splits);
    plan_combine(plan, s);
  }
  hp->m_blocks = sched.m_blocks;
  hp->batch_heads = sched.batch_heads;
  hp->heads_per_section = sched.heads_per_section;
  hp->tiles = sched.tiles;
  plan.grid = {static_cast<unsigned>(sched.grid), 1, 1};
  plan.argument = std::move(hp);
}

}  // namespace

/// block_m {128, 192} x block_n {64, 80, 128, 176, 192} with a producer warpgroup (warps 12, 16)
/// x stages {2, 3} x schedule {3, 5, 6, 7, 13, 22}: ping-pong on one block per tile, and on a
/// persistent grid the overlap alone (also with two Q tiles), ping-pong alone (what fits 192x192
/// at D=64) or both; 22 adds the half-width last tile to ping-pong alone (kept only where it can
/// act: causal, or a short last K/V tile; 23, the same with the overlap, tied or lost to it in
/// call 8 and cost a D=64 causal cold tune a tenth of its compile time).
/// FlashAttention-3's tiles (D=64 192x128 and 192x192, D=128 128x128 and 128x176, D=256 128x80)
/// are in it, next to the wgmma family's winners. Measured on the H200 (kernels/NOTES.md): the
/// winners came from stages 2 and 3 and schedules 3, 5 and 7, and two Q tiles (13) won the
/// headline shape by 2.4% in call 4, the half-width last tile 32,32,512,64 causal by 2.6% in call 7.
///
/// Decode (decode_sized: at most 64 packed rows per K/V head): the decode axes, splits and pack_gqa
/// (for_problem chooses their values), over one computing warpgroup (block_m 64: a decode tile's
/// rows are few) x block_n {64, 128} x stages {2, 3, 4} x schedule {1, 5}: the overlap, on one
/// block per tile or a persistent grid. Prefill shapes search splits 1 only unless --space names more;
/// speculative decode that packs (packing_pays) keeps the prefill tiles and, where their grid covers
/// at most half the SMs, searches short_grid_splits.
search_space hopper_default_space() {
  search_space space{{128, 192}, {64, 80, 128, 176, 192}, {12, 16}, {2, 3}, {3, 5, 6, 7, 13, 22}};
  space.knob_name = "schedule";
  space.decode_axes = true;
  space.splits.clear();  // chosen per problem (for_problem): 1 and no packing for prefill
  space.pack_gqa.clear();
  space.decode = {{64}, {64, 128}, {8}, {2, 3, 4}, {1, 5}, 0, false};  // prefill: splits 1 (not measured yet)
  // Schedules 3 and 5 with the bit that won on such problems (NOTES V13, H5; H100, 2026-12-07):
  // softcap's tanh as a polynomial (bf16 only: hopper_reject), -4% at D=128 causal softcap 50;
  // trimmed warpgroups, -3% at D=256 causal w1024.
  space.knob_extras = {
      {[](const problem& p) { return has_softcap(p) && p.dtype == dtype::bf16; },
       {3 | attn_k::schedule_softcap_poly, 5 | attn_k::schedule_softcap_poly},
       "with softcap in bf16"},
      {[](const problem& p) { return has_window(p); },
       {3 | attn_k::schedule_trim, 5 | attn_k::schedule_trim},
       "with a window"}};
  return space;
}

const kernel_family& hopper_family() {
  static const kernel_family family{
      "hopper",
      backend::cuda,
      "attn_hopper",
      9,
      hopper_default_space(),
      hopper_shared_memory,
      hopper_threads,
      hopper_reject,
      hopper_instantiation,
      {"--use_fast_math"},
      family_sources({"hopper.cuh", "reference.cuh"}),
      true,  // arch-specific: sm_90a runs on cc 9.0 only
      hopper_plan,
      true,  // supersedes fa2 and wgmma on sm_90 (every benchmark-table winner is hopper's)
      "attn_hopper_combine",
      true,   // kv_lens and a paged cache (pages of 16 rows or more)
      true,   // a sliding window and softcap
      8,      // head dims of 8s: tiles padded to 16, read through TMA with zeros past D
      true,   // dv != d
      true};  // a packed batch
  return family;
}

}  // namespace attn
