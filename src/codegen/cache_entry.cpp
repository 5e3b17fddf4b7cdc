#include "codegen/cache_entry.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "core/digest.hpp"

namespace attn {

namespace {
constexpr std::string_view magic = "attn-tune cache entry 1";
}

std::string encode_cache_entry(const cache_entry& e) {
  const std::string payload = e.binary + e.log;
  return fmt::format("{} {} {} {}\n", magic, e.binary.size(), e.log.size(), xxh3_128_hex(payload)) + payload;
}

std::optional<cache_entry> decode_cache_entry(std::string_view bytes, std::string& why) {
  const size_t eol = bytes.find('\n');
  if (bytes.rfind(magic, 0) != 0 || eol == std::string_view::npos || eol > 200) {
    why = "not a cache entry (no header)";
    return std::nullopt;
  }
  const std::string header(bytes.substr(magic.size(), eol - magic.size()));
  unsigned long long binary_size = 0, log_size = 0;
  char digest[33] = {};
  int used = 0;
  if (std::sscanf(header.c_str(), " %llu %llu %32[0-9a-f]%n", &binary_size, &log_size, digest, &used) != 3 ||
      static_cast<size_t>(used) != header.size() || std::string_view(digest).size() != 32) {
    why = "a malformed header";
    return std::nullopt;
  }
  const std::string_view payload = bytes.substr(eol + 1);
  if (payload.size() != binary_size + log_size) {
    why = fmt::format("{} bytes where the header says {}", payload.size(), binary_size + log_size);
    return std::nullopt;
  }
  if (xxh3_128_hex(payload) != digest) {
    why = "checksum mismatch";
    return std::nullopt;
  }
  if (binary_size == 0) {
    why = "an empty binary";
    return std::nullopt;
  }
  return cache_entry{std::string(payload.substr(0, binary_size)), std::string(payload.substr(binary_size))};
}

}  // namespace attn
