#pragma once
// The 16-bit element types' bits to and from float32, on the host: exact widening, and rounding
// to nearest even. Used wherever the host reads or writes fp16/bf16 data (the float64 row check,
// --dump's .npy files, the tests).
#include <bit>
#include <cmath>
#include <cstdint>

#include "core/problem.hpp"

namespace attn {

/// bf16 bits -> float32, exact.
inline float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// IEEE half bits -> float32, exact (subnormals, inf, NaN included).
inline float half_to_float(uint16_t bits) {
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

/// float -> bf16 / half bits, round to nearest even (NaN stays NaN).
inline uint16_t float_to_bf16(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  // Truncating a NaN whose payload sits in the low bits would turn it into infinity.
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x0040);
  const uint32_t rounding = 0x7FFFu + ((f >> 16) & 1);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

inline uint16_t float_to_half(float x) {
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

/// The bits of one element of type t (bf16 or fp16) -> float32, exact.
inline float elem_to_float(dtype t, uint16_t bits) {
  return t == dtype::bf16 ? bf16_to_float(bits) : half_to_float(bits);
}

}  // namespace attn
