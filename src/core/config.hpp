#pragma once
// A launch configuration of a kernel family and the space of them that the tuner searches.
#include <string>
#include <vector>

namespace attn {

struct tile_config {
  int block_m = 64;
  int block_n = 64;
  int warps = 4;
  int stages = 2;
  /// A family's own axis (search_space::knob_name): mfma's waves per EU. 0 = not set, and the only
  /// value of families without one.
  int knob = 0;
  bool operator==(const tile_config&) const = default;
};

/// "m128_n64_w4_s2", "_k<knob>" appended when the knob is set: stable, used in tables, CSV and
/// cache keys.
std::string name(const tile_config& c);
/// Inverse of name(); throws invalid_input naming the text.
tile_config parse_config_name(const std::string& text);
/// Orders configs from simplest to most complex: fewer stages, then fewer warps, then smaller
/// block_m, then smaller block_n, then the smaller knob. Used to break near-ties deterministically.
bool simpler_than(const tile_config& a, const tile_config& b);

struct search_space {
  std::vector<int> block_m;
  std::vector<int> block_n;
  std::vector<int> warps;
  std::vector<int> stages;
  std::vector<int> knob = {0};
  /// The family's own axis as --space names it (e.g. "waves_per_eu"); empty: the family has none.
  std::string knob_name;
  /// Every combination, block_m outermost, the knob innermost, in the order the values are listed.
  std::vector<tile_config> enumerate() const;
};

/// "block_m=64,128 block_n=32,64 warps=4 stages=1,2", then " <knob_name>=..." when it has one:
/// the space as --space writes it.
std::string space_text(const search_space& s);

/// block_m {64,128,256} x block_n {32,64,128} x warps {4,8} x stages {1,2,3,4}: 72 configs.
search_space default_space();
/// Tokens like {"block_m=64,128", "block_n=64", "warps=4", "stages=2,3"}; axes not named keep
/// their default values. Throws invalid_input naming the bad token: unknown axis, missing '=',
/// empty list, non-numeric or non-positive value, duplicate axis.
search_space parse_space(const std::vector<std::string>& tokens);
/// The same, with axes not named taken from `base` (a family's own default space), and its knob
/// axis accepted under base.knob_name (values >= 0; 0 = not set).
search_space parse_space(const std::vector<std::string>& tokens, const search_space& base);

}  // namespace attn
