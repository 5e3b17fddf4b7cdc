#include "core/digest.hpp"

#include <xxhash.h>

#include <fmt/format.h>

namespace attn {

std::string xxh3_128_hex(std::string_view text) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(text.data(), text.size()));
  std::string out;
  for (unsigned char b : c.digest) out += fmt::format("{:02x}", b);
  return out;
}

uint64_t xxh3_64(std::string_view text) { return XXH3_64bits(text.data(), text.size()); }

}  // namespace attn
