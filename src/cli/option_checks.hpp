#pragma once
// Checks of single command-line values, where they enter (pure, unit-tested): each throws
// invalid_input naming the option and the bad value.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/problem.hpp"  // attention_pass

namespace attn {

/// --seed: a decimal integer in [0, 2^64); "-1" and "1e3" are refused, not wrapped or cut.
uint64_t parse_seed(const std::string& text);

/// A positive count (--kv-len, --kv-heads) below 2^63: "invalid --kv-len 'TEXT': ...".
int64_t parse_positive_count(const std::string& text, const std::string& option);

/// --kv-lens as the problem's kv_lens text: L1,L2,... becomes L1/L2/... (the form files and keys
/// keep: a comma separates their fields); uniform:LO:HI stays. Throws naming a text of neither form.
/// --seqlens and --kv-seqlens take the same forms (`option` names the one given).
std::string kv_lens_from_option(const std::string& text, const std::string& option = "--kv-lens");
/// The capacity --kv-lens needs when --kv-len is not given: the longest length (HI for
/// uniform:LO:HI), at least 1.
int64_t longest_kv_len(const std::string& kv_lens, const std::string& option_text,
                       const std::string& option = "--kv-lens");

/// --window LEFT,RIGHT: two integers, each -1 (no limit on that side) or a key count >= 0.
/// Throws naming the text ("invalid --window '5': expected LEFT,RIGHT ...").
std::pair<int64_t, int64_t> parse_window(const std::string& text);
/// --softcap C: 0 (off) or a positive finite number.
double parse_softcap(const std::string& text);
/// --dv N: V's and O's head dim, in [32, 256] like the head dim's.
int64_t parse_value_dim(const std::string& text);

/// --configs' names for a run of this pass: forward configs (m128_n64_w4_s2), backward variants
/// (kv_m32_n64_w4_s2-q_m64_n64_w4_s2) for pass bwd, either for fwdbwd (each goes to its pass).
/// Throws invalid_input naming a bad one, or one of the other pass.
void check_config_names(const std::vector<std::string>& configs, attention_pass pass);
/// --configs naming one config twice.
void check_distinct(const std::vector<std::string>& configs);

/// The argument list as a shell would need it typed again (each word quoted when it has to be).
std::string shell_words(const std::vector<std::string>& words);

}  // namespace attn
