#pragma once
// A collision-resistant content hash (XXH3, Debian's libxxhash): the compile cache's keys and
// entry checksums, the results CSVs' end line, the kernel sources' hash, bundles' checksums.
#include <cstdint>
#include <string>
#include <string_view>

namespace attn {

/// XXH3-128 of text as 32 lower-case hex digits (the canonical, big-endian byte order).
std::string xxh3_128_hex(std::string_view text);
/// XXH3-64 of text: the kernel sources' hash (written as 16 hex digits).
uint64_t xxh3_64(std::string_view text);

}  // namespace attn
