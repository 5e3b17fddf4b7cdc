#include "backend/tensor_map.hpp"

#include <bit>

#include <fmt/format.h>

namespace attn {

int swizzle_bytes_for(int64_t head_dim) {
  const int64_t tile = (head_dim + 15) / 16 * 16;  // the tile's width: the head dim padded to 16
  return tile % 64 == 0 ? 128 : tile % 32 == 0 ? 64 : 32;
}

tensor_map_args tensor_map_for(const void* base, bool bf16, int64_t head_dim, int64_t rows, int64_t heads,
                               int64_t batch, int64_t row_stride, int64_t head_stride, int64_t batch_stride,
                               int box_rows) {
  tensor_map_args a;
  a.base = base;
  a.bf16 = bf16;
  a.swizzle_bytes = swizzle_bytes_for(head_dim);
  a.dims = {static_cast<uint64_t>(head_dim), static_cast<uint64_t>(rows), static_cast<uint64_t>(heads),
            static_cast<uint64_t>(batch)};
  a.strides = {static_cast<uint64_t>(row_stride) * 2, static_cast<uint64_t>(head_stride) * 2,
               static_cast<uint64_t>(batch_stride) * 2};
  a.box = {static_cast<uint32_t>(a.swizzle_bytes / 2), static_cast<uint32_t>(box_rows), 1, 1};
  return a;
}

int64_t pack_slots(int64_t group) { return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(group))); }

tensor_map_args packed_tensor_map_for(const void* base, bool bf16, int64_t head_dim, int64_t rows, int64_t heads,
                                      int64_t group, int64_t batch, int64_t row_stride, int64_t head_stride,
                                      int64_t batch_stride, int box_rows) {
  tensor_map_args a = tensor_map_for(base, bf16, head_dim, rows, heads / group, batch, row_stride, head_stride * group,
                                     batch_stride, box_rows);
  a.group = static_cast<uint64_t>(group);
  a.slots = static_cast<uint64_t>(pack_slots(group));
  a.group_stride = static_cast<uint64_t>(head_stride) * 2;
  return a;
}

std::optional<std::string> tensor_map_problem(const tensor_map_args& a) {
  if (a.group > 0) {
    if (a.slots != static_cast<uint64_t>(pack_slots(static_cast<int64_t>(a.group))) || a.slots > 256 ||
        a.box[1] % a.slots != 0)
      return fmt::format("packed GQA's box of {} rows is not a whole number of groups of {} heads in {} slots "
                         "(at most 256)",
                         a.box[1], a.group, a.slots);
    if (a.group_stride % 16 != 0 || a.group_stride >= (1ULL << 40))
      return fmt::format("the head stride of {} bytes is not a multiple of 16 bytes below 2^40, which TMA needs",
                         a.group_stride);
  }
  static const char* const stride_names[] = {"row", "head", "batch"};
  for (int i = 0; i < 3; ++i) {
    if (a.strides[i] % 16 != 0)
      return fmt::format("the {} stride of {} bytes is not a multiple of 16 bytes, which TMA needs",
                         stride_names[i], a.strides[i]);
    if (a.strides[i] >= (1ULL << 40))
      return fmt::format("the {} stride of {} bytes is not below 2^40, which TMA needs", stride_names[i],
                         a.strides[i]);
  }
  if (reinterpret_cast<uintptr_t>(a.base) % 16 != 0)
    return fmt::format("the tensor's address {} is not 16-byte aligned, which TMA needs", a.base);
  static const char* const dim_names[] = {"head dim", "rows", "heads", "batch"};
  for (int i = 0; i < 4; ++i)
    if (a.dims[i] == 0 || a.dims[i] > (1ULL << 32))
      return fmt::format("{} {} is outside TMA's [1, 2^32]", dim_names[i], a.dims[i]);
  if (a.box[1] == 0 || a.box[1] > 256) return fmt::format("a box of {} rows is outside TMA's [1, 256]", a.box[1]);
  // A head dim of 8s (72) is read in boxes over its tile padded to 16 (80): the last box's
  // columns past it read as zeros and are not written.
  if (a.box[0] * 2 != static_cast<uint32_t>(a.swizzle_bytes) || (a.dims[0] + 15) / 16 * 16 % a.box[0] != 0)
    return fmt::format("a box {} elements wide does not tile the head dim {} in {}-byte swizzle spans", a.box[0],
                       a.dims[0], a.swizzle_bytes);
  return std::nullopt;
}

}  // namespace attn
