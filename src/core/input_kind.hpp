#pragma once
// The inputs a tuning checks its variants on (--inputs). Standard-normal Q, K and V give scores
// with a spread of about 1, where the online softmax's lazy rescale (the row max growing by more
// than 2^8 after the first tile) never runs; trained models' long-context attention has a far
// wider spread and attention sinks (a few keys with very large logits). verify/input_fill.hpp
// turns a kind into each tensor's distribution.
#include <string>

namespace attn {

/// normal: standard-normal Q, K, V. wide: scores whose spread grows along the keys, from a
/// standard deviation of 4 at the first key to 12 at the last (row maxima of 20 to 40, growing
/// across tiles). sink: queries that share a direction, and keys 0, N/3 and 2N/3 along it, with
/// logits of about 30, 20 and 40 over the other keys' spread of about 1.4.
enum class input_kind { normal, wide, sink };

std::string to_string(input_kind k);  ///< "normal", "wide", "sink"
/// Throws invalid_input naming the bad value.
input_kind parse_input_kind(const std::string& text);

}  // namespace attn
