#pragma once
// A collision-resistant content hash (XXH3-128, Debian's libxxhash): the compile cache's keys and
// entry checksums, and the results CSVs' end line.
#include <string>
#include <string_view>

namespace attn {

/// XXH3-128 of text as 32 lower-case hex digits (the canonical, big-endian byte order).
std::string xxh3_128_hex(std::string_view text);

}  // namespace attn
