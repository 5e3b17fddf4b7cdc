#pragma once
// One compile-cache entry as one file: a header line with the sizes of the binary and the log and
// the XXH3-128 checksum of both, then the binary, then the log. Written whole (atomically), so a
// reader sees all of an entry or none, and the checksum catches what happened to it afterwards.
#include <optional>
#include <string>
#include <string_view>

namespace attn {

struct cache_entry {
  std::string binary;
  std::string log;
};

/// The file's bytes for an entry.
std::string encode_cache_entry(const cache_entry& e);

/// The entry, or nullopt with `why` set (e.g. "checksum mismatch", "cut short") when the bytes
/// are not a whole, unchanged entry.
std::optional<cache_entry> decode_cache_entry(std::string_view bytes, std::string& why);

}  // namespace attn
