#include "report/npy.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
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

float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24 is exact in float32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_bf16(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  // Truncating a NaN whose payload sits in the low bits would turn it into infinity.
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x0040);
  const uint32_t rounding = 0x7FFFu + ((f >> 16) & 1);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

uint16_t float_to_half(float x) {
  const uint32_t f_signed = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint16_t>((f_signed >> 16) & 0x8000);
  const uint32_t f = f_signed & 0x7FFFFFFFu;
  if (f >= 0x7F800000u) {  // inf or NaN; a NaN keeps its top payload bits and is made quiet
    if (f == 0x7F800000u) return sign | 0x7C00;
    return static_cast<uint16_t>(sign | 0x7E00 | ((f >> 13) & 0x3FF));
  }
  // 65520 is halfway between 65504 (largest half) and 65536; the tie goes to the even 65536,
  // which does not exist, so it and everything above becomes infinity.
  if (f >= 0x477FF000u) return sign | 0x7C00;
  if (f < 0x38800000u) {  // below 2^-14: a half subnormal (or zero) in units of 2^-24
    const uint32_t exponent = f >> 23;
    const uint32_t shift = 126 - exponent;
    if (shift > 24) return sign;  // below 2^-25, rounds to zero
    const uint32_t mantissa = (f & 0x7FFFFFu) | 0x800000u;
    uint32_t result = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (result & 1))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits; a carry
  // into the exponent is the correct result.
  uint32_t result = (f - 0x38000000u) >> 13;
  const uint32_t rest = f & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1))) ++result;
  return static_cast<uint16_t>(sign | result);
}

}  // namespace attn
