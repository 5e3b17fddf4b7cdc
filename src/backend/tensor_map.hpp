#pragma once
// What the copy engine (TMA) is told about one tensor: the arguments of cuTensorMapEncodeTiled
// for a [batch][head][row][D] tensor of 16-bit elements with any element strides, read or written
// in boxes of `box_rows` rows by one swizzle span of D (the layout of kernels/common/swizzle.cuh);
// a D of 8s that is not of 16s is read as its tile padded to 16, the columns past D as zeros.
// Pure values, so the encoding is checked on the CPU; the runtime turns them into the 128 bytes.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace attn {

struct tensor_map_args {
  const void* base = nullptr;
  std::array<uint64_t, 4> dims{};     ///< elements: D, rows, heads, batch (innermost first)
  std::array<uint64_t, 3> strides{};  ///< bytes between consecutive rows, heads, batches
  std::array<uint32_t, 4> box{};      ///< elements: span, box_rows, 1, 1
  int swizzle_bytes = 128;            ///< 128, 64 or 32: the span is swizzle_bytes / 2 elements
  bool bf16 = true;                   ///< else fp16
  /// Packed GQA's Q and O (group > 0): a 5-d map {D, head in the group, row, K/V head, batch}
  /// whose boxes of `slots` heads x box[1] / slots rows come out in packed order (row-major over
  /// (row, head slot)). slots is the group padded to a power of two, so boxes of 64 rows hold
  /// whole groups (a group of 7 in 8 slots): the slots past the group are out of the tensor, read
  /// as zeros and never written. dims[2] is then the K/V heads and strides[1] the K/V head's;
  /// group_stride is the bytes between the group's heads.
  uint64_t group = 0, group_stride = 0, slots = 0;
};

/// The swizzle the tiles of a head dim use: 128 bytes when the tile (D padded to 16) is a multiple
/// of 64 elements, else 64 when a multiple of 32, else 32 (mirrors kernels/common/swizzle.cuh).
int swizzle_bytes_for(int64_t head_dim);

/// Strides in elements, as attn_k::fwd_params holds them.
tensor_map_args tensor_map_for(const void* base, bool bf16, int64_t head_dim, int64_t rows, int64_t heads,
                               int64_t batch, int64_t row_stride, int64_t head_stride, int64_t batch_stride,
                               int box_rows);

/// The group padded to a power of two: the head slots of one query row in packed GQA's row space
/// (hopper's; 7 heads take 8 slots).
int64_t pack_slots(int64_t group);

/// The same tensor read in packed GQA's order (tensor_map_args::group): `heads` query heads in
/// groups of `group` sharing a K/V head, boxes of box_rows packed rows (a multiple of the group's
/// pack_slots).
tensor_map_args packed_tensor_map_for(const void* base, bool bf16, int64_t head_dim, int64_t rows, int64_t heads,
                                      int64_t group, int64_t batch, int64_t row_stride, int64_t head_stride,
                                      int64_t batch_stride, int box_rows);

/// Why TMA cannot describe the tensor (a stride or base address not a multiple of 16 bytes, a box
/// past 256 rows, a size past 2^32), naming the value; nullopt when it can.
std::optional<std::string> tensor_map_problem(const tensor_map_args& a);

}  // namespace attn
