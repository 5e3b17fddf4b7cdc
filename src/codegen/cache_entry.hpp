#pragma once
// One compile-cache entry as one file: a header line with the entry's key, the sizes of the binary
// and the log and the XXH3-128 checksum of the key and both, then the binary, then the log. Written
// whole (atomically), so a reader sees all of an entry or none; the checksum catches what happened
// to it afterwards, and the key an entry copied over another one (every config's kernel has the
// same name, so a wrong cubin would load and run).
#include <optional>
#include <string>
#include <string_view>

namespace attn {

struct cache_entry {
  std::string binary;
  std::string log;
};

/// The file's bytes for the entry of `key`.
std::string encode_cache_entry(const std::string& key, const cache_entry& e);

/// The entry, or nullopt with `why` set (e.g. "checksum mismatch", "cut short", "it holds the
/// entry of another key") when the bytes are not a whole, unchanged entry of `key`.
std::optional<cache_entry> decode_cache_entry(std::string_view bytes, const std::string& key, std::string& why);

/// True for the entries of the format before the key was in them: a miss, compiled again quietly.
bool is_older_cache_entry(std::string_view bytes);

}  // namespace attn
