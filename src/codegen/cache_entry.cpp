#include "codegen/cache_entry.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "core/digest.hpp"

namespace attn {

namespace {
constexpr std::string_view magic = "attn-tune cache entry 2";
constexpr std::string_view older_magic = "attn-tune cache entry 1 ";
constexpr size_t max_header = 400;

// What the checksum covers: the key too, so an entry moved under another key's name fails it.
std::string checked_text(std::string_view key, std::string_view payload) {
  std::string text(key);
  text += '\n';
  text += payload;
  return text;
}
}  // namespace

std::string encode_cache_entry(const std::string& key, const cache_entry& e) {
  const std::string payload = e.binary + e.log;
  return fmt::format("{} {} {} {} {}\n", magic, key, e.binary.size(), e.log.size(),
                     xxh3_128_hex(checked_text(key, payload))) +
         payload;
}

bool is_older_cache_entry(std::string_view bytes) { return bytes.rfind(older_magic, 0) == 0; }

std::optional<cache_entry> decode_cache_entry(std::string_view bytes, const std::string& key, std::string& why) {
  const size_t eol = bytes.find('\n');
  if (bytes.rfind(magic, 0) != 0 || eol == std::string_view::npos || eol > max_header) {
    why = "not a cache entry (no header)";
    return std::nullopt;
  }
  const std::string header(bytes.substr(magic.size(), eol - magic.size()));
  unsigned long long binary_size = 0, log_size = 0;
  char stored_key[max_header] = {}, digest[33] = {};
  int used = 0;
  if (std::sscanf(header.c_str(), " %399s %llu %llu %32[0-9a-f]%n", stored_key, &binary_size, &log_size, digest,
                  &used) != 4 ||
      static_cast<size_t>(used) != header.size() || std::string_view(digest).size() != 32) {
    why = "a malformed header";
    return std::nullopt;
  }
  if (stored_key != key) {
    why = fmt::format("it holds the entry of another key, {} (copied over this one?)", stored_key);
    return std::nullopt;
  }
  const std::string_view payload = bytes.substr(eol + 1);
  if (payload.size() != binary_size + log_size) {
    why = fmt::format("{} bytes where the header says {}", payload.size(), binary_size + log_size);
    return std::nullopt;
  }
  if (xxh3_128_hex(checked_text(key, payload)) != digest) {
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
