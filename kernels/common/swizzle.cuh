#pragma once
// The tensor cores' swizzled shared-memory layout of a tile of rows of D elements, and the wgmma
// matrix descriptor that reads it. TMA's SWIZZLE_128B/64B/32B modes write exactly this layout, so
// cp.async (wgmma family) and the copy engine (hopper family) fill the same tiles.

namespace attn_k {

/// The shared-memory layout of a tile of `rows` rows of D elements, as the tensor cores read it
/// with a swizzle of W bytes (128 when D is a multiple of 64, else 64 or 32): each row is cut
/// into W-byte pieces, piece b of every row is stored together (rows x W bytes, row r at r * W),
/// and the 16-byte chunks of a piece are permuted by XOR with address bits 7 and up (the
/// hardware's Swizzle<log2(W/16), 4, 3>), so any 8 rows' chunk c sit in distinct banks. Tiles
/// start 1024-byte aligned, where the pattern repeats.
template <int D>
struct swizzle {
  static constexpr int W = D % 64 == 0 ? 128 : D % 32 == 0 ? 64 : 32;
  static constexpr int CHUNKS = W / 16;  ///< 16-byte chunks per piece
  static constexpr unsigned long long MODE = W == 128 ? 1 : W == 64 ? 2 : 3;  ///< descriptor bits 62-63
};
/// Byte offset of 16-byte chunk c (of D / 8) of row r.
template <int D>
__device__ __forceinline__ unsigned tile_offset(int r, int c, int rows) {
  using S = swizzle<D>;
  const unsigned off = (c / S::CHUNKS) * rows * S::W + r * S::W + (c % S::CHUNKS) * 16;
  return off ^ (((off >> 7) & (S::CHUNKS - 1)) << 4);
}

/// Shared-memory matrix descriptor with D's swizzle. K-major operands (Q, K): sbo is the stride
/// of 8-row groups, lbo unused (an instruction's 16 K elements lie inside one piece). MN-major
/// (V, N = d): lbo is the stride of W-byte pieces along N, sbo that of 8-key groups.
template <int D>
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (swizzle<D>::MODE << 62);
}
}  // namespace attn_k
