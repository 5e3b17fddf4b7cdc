#pragma once
// NumPy .npy files (format version 1.0), so anyone can check a result with numpy or PyTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

/// float32, little-endian ('<f4'), C order. Throws std::runtime_error naming the path.
void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& dims);
/// float16 ('<f2'), raw IEEE half bits.
void write_npy_f16(const std::string& path, const uint16_t* data, const std::vector<int64_t>& dims);

}  // namespace attn
