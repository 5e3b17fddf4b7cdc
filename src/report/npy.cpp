#include "report/npy.hpp"

#include <fmt/format.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace attn {

namespace {

// Data is written straight from memory, which is only right where memory is little-endian.
static_assert(std::endian::native == std::endian::little, "npy writer assumes little-endian");

// Format 1.0: magic, version, a 2-byte header length, then a Python dict literal padded with
// spaces and a final '\n' so that the data starts at a multiple of 64 bytes.
std::string npy_header(const char* descr, const std::vector<int64_t>& dims) {
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += fmt::format("{}, ", dims[i]);
  if (dims.size() > 1)
    shape.resize(shape.size() - 2);  // a 1-tuple keeps its comma: "(5,)"
  else if (dims.size() == 1)
    shape.pop_back();
  shape += ")";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  constexpr size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  const size_t unpadded = prefix + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 0xFFFF) throw std::runtime_error("npy header too long for format 1.0");
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

void write_npy(const std::string& path, const char* descr, const void* data, size_t element_size,
               const std::vector<int64_t>& dims) {
  size_t count = 1;
  for (int64_t d : dims) {
    if (d < 0)
      throw std::runtime_error(fmt::format("cannot write '{}': negative dimension {}", path, d));
    count *= static_cast<size_t>(d);
  }
  std::string header;
  try {
    header = npy_header(descr, dims);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path, e.what()));
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}': cannot open it", path));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (count > 0)
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(count * element_size));
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}': write failed", path));
}

}  // namespace

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& dims) {
  write_npy(path, "<f4", data, sizeof(float), dims);
}

void write_npy_f16(const std::string& path, const uint16_t* data,
                   const std::vector<int64_t>& dims) {
  write_npy(path, "<f2", data, sizeof(uint16_t), dims);
}

}  // namespace attn
