#pragma once
// The hopper family's host-side formulas, exposed for the tests: its tile schedule, register
// budget and TMA check. The family itself is hopper_family() (codegen/family.hpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/problem.hpp"

namespace attn {

/// The launch of one problem (mirrors kernels/hopper/scheduler.cuh's numbering).
struct hopper_schedule {
  int m_blocks = 0;           ///< query blocks per (batch, head) (pack_gqa: per (batch, K/V head))
  int batch_heads = 0;        ///< B x H (pack_gqa: B x H_kv)
  int heads_per_section = 0;  ///< (batch, head) pairs whose K and V share half of L2
  int tiles = 0;              ///< m_blocks x batch_heads x splits
  int grid = 0;               ///< blocks: min(tiles, SMs) when persistent, else tiles
};
/// A row block's row space: q_len, or packed (pack_gqa) a K/V head's q_len x pack_slots(group)
/// rows (the group padded to a power of two, so a warpgroup's 64 rows hold whole groups; the rows
/// of the slots past the group are computed on zeros and never stored).
int64_t hopper_rows(const problem& s, int pack_gqa);
/// Throws invalid_input when the tiles do not fit in 32 bits (tile_count_problem).
/// pack_gqa: a tile's rows are the packed rows of a K/V head's group (hopper_rows) and its head a
/// K/V head; splits: each row block's tiles are that many splits of its K/V range.
hopper_schedule schedule_for(const problem& s, int block_m, int64_t l2_bytes, int sm_count, bool persistent,
                             int pack_gqa = 0, int splits = 1);
/// Why the tiles (query blocks x B x H; a packed batch's over its longest sequence) do not fit in
/// the kernel's 32-bit tile index; nullopt when they do.
std::optional<std::string> tile_count_problem(const problem& s, int block_m, int pack_gqa = 0, int splits = 1);

/// Blocks an SM the launch bounds ask for: 2 with schedule bit 32 (two blocks an SM), else 1.
int hopper_blocks_per_sm(const tile_config& c);
/// Registers a computing thread gets after the producer's hand-over (setmaxnreg).
int hopper_consumer_registers(const tile_config& c);
/// Registers O, S and P take per computing thread under the config's schedule.
int hopper_state_registers(const tile_config& c, const problem& s);

/// Why TMA cannot describe the shape's Q/O or K/V (a stride not a multiple of 16 bytes, ...).
std::optional<std::string> tma_stride_problem(const problem& s);

}  // namespace attn
