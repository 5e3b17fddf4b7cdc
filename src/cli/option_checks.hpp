#pragma once
// Checks of single command-line values, where they enter (pure, unit-tested): each throws
// invalid_input naming the option and the bad value.
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

/// --seed: a decimal integer in [0, 2^64); "-1" and "1e3" are refused, not wrapped or cut.
uint64_t parse_seed(const std::string& text);

/// A positive count (--kv-len, --kv-heads) below 2^63: "invalid --kv-len 'TEXT': ...".
int64_t parse_positive_count(const std::string& text, const std::string& option);

/// --configs naming one config twice.
void check_distinct(const std::vector<std::string>& configs);

/// The argument list as a shell would need it typed again (each word quoted when it has to be).
std::string shell_words(const std::vector<std::string>& words);

}  // namespace attn
