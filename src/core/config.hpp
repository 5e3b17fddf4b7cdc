#pragma once
// A launch configuration of a kernel family and the space of them that the tuner searches.
#include <string>
#include <vector>

namespace attn {

struct problem;  // core/problem.hpp

struct tile_config {
  int block_m = 64;
  int block_n = 64;
  int warps = 4;
  int stages = 2;
  /// A family's own axis (search_space::knob_name): mfma's waves per EU. 0 = not set, and the only
  /// value of families without one.
  int knob = 0;
  /// Split-KV (decode axes, families with search_space::decode_axes): the K/V range of a row
  /// block is split over `splits` blocks whose partial O and LSE are merged (in the kernel by the last
  /// of them up to 4 splits, by a combine kernel above); 1 = none.
  int splits = 1;
  /// 1: the query rows of the heads that share a K/V head form one M tile (each K/V tile is then
  /// read once per K/V head, not once per query head); 0: one head's rows per tile.
  int pack_gqa = 0;
  bool operator==(const tile_config&) const = default;
};

/// Whether a config uses a decode axis (splits > 1 or pack_gqa 1).
inline bool has_decode_axes(const tile_config& c) { return c.splits != 1 || c.pack_gqa != 0; }
/// The same tile without the decode axes (splits 1, pack_gqa 0): what a problem that refuses them
/// (MHA, a packed batch) can still run.
inline tile_config without_decode_axes(tile_config c) {
  c.splits = 1, c.pack_gqa = 0;
  return c;
}

/// "m128_n64_w4_s2", then "_k<knob>" when the knob is set, "_p<splits>" when splits > 1 and
/// "_g1" when pack_gqa is set: stable, used in tables, CSV and cache keys.
std::string name(const tile_config& c);
/// Inverse of name(); throws invalid_input naming the text.
tile_config parse_config_name(const std::string& text);
/// Orders configs from simplest to most complex: fewer stages, then fewer warps, then smaller
/// block_m, then smaller block_n, then the smaller knob, fewer splits, no packing. Used to break
/// near-ties deterministically.
bool simpler_than(const tile_config& a, const tile_config& b);

struct search_space {
  std::vector<int> block_m;
  std::vector<int> block_n;
  std::vector<int> warps;
  std::vector<int> stages;
  std::vector<int> knob = {0};
  /// The family's own axis as --space names it (e.g. "waves_per_eu"); empty: the family has none.
  std::string knob_name;
  /// Whether the family takes the decode axes, splits and pack_gqa (--space splits=1,4
  /// pack_gqa=0,1). Their values empty: chosen per problem (for_problem); enumerate() alone
  /// then takes splits 1 and pack_gqa 0.
  bool decode_axes = false;
  std::vector<int> splits = {1};
  std::vector<int> pack_gqa = {0};
  /// The axes --space named (the others are the family's defaults, which for_problem may adapt).
  std::vector<std::string> named;
  /// When set, only configs with block_m / warps == warp_rows (the decode defaults: 16 rows per
  /// warp, one mma tile, so that no warp spills).
  int warp_rows = 0;
  /// The family's tiles for a decode-sized problem (decode_sized), which for_problem puts in place
  /// of the axes --space did not name; an empty list keeps that axis.
  struct decode_tiles {
    std::vector<int> block_m, block_n, warps, stages, knob;
    int warp_rows = 0;
    /// Whether a problem that is not decode-sized searches split counts too (a prefill grid
    /// short of the SMs); else splits 1 there unless --space names them.
    bool prefill_splits = true;
  } decode;
  /// Knob values that a prefill problem searches besides `knob`, where --space did not name the
  /// knob: `values` for the problems `applies` to (hopper: the schedule bits that act on softcap
  /// and on a window, which other problems need not compile).
  struct knob_extra {
    bool (*applies)(const problem&) = nullptr;
    std::vector<int> values;
    std::string when;  ///< the problems, for --help: "with softcap in bf16"
  };
  std::vector<knob_extra> knob_extras;
  /// Every combination, block_m outermost, then block_n, warps, stages, the knob, splits,
  /// pack_gqa innermost, in the order the values are listed.
  std::vector<tile_config> enumerate() const;
};

/// The space a problem is searched over: a decode axis left to the family (empty) becomes the
/// heuristic's values, and for a decode-sized problem (decode_sized) the tile axes --space did not
/// name become the decode defaults: block_m 16, 32, 64 with one warp per 16 rows, block_n 64 and
/// 128, stages 2 to 4 (few query rows per block, many blocks, deep K/V rings).
/// A problem that is not decode-sized also gets the knob_extras that apply to it.
/// sm_count: the device's SMs (0: not known, taken as 132, an H200's). Other spaces unchanged.
search_space for_problem(const search_space& s, const problem& p, int sm_count);
/// The knob values for_problem adds to the knob axis for p (s.knob_extras that apply, not already
/// in s.knob): none for a decode-sized problem or where --space named the knob.
std::vector<int> knob_extras_for(const search_space& s, const problem& p);
/// The knob_extras for --help: "; schedule +67,69 with softcap in bf16, +131,133 with a window"
/// (empty without).
std::string knob_extras_text(const search_space& s);
/// Few query rows against many keys: at most 64 query rows per K/V head when packed (decode,
/// speculative decode), at least 4 times as many keys as query rows.
bool decode_sized(const problem& p);
/// Whether packed GQA is searched (pack_gqa 0 and 1): GQA/MQA with at least 4 times as many keys
/// as query rows and at most 256 packed rows per K/V head (decode, and speculative decode over
/// groups of 8, whose 128 packed rows keep the prefill tiles but fill them).
bool packing_pays(const problem& p);
/// The heuristic's split counts: {1} when the grid of (pack_gqa ? packed : unpacked) 64-row
/// blocks already fills 4 waves of sm_count SMs or the keys are few; else 1 and the powers of two
/// around the count that does, at most 128 and at most one split per 64 keys.
std::vector<int> default_splits(const problem& p, bool pack_gqa, int sm_count);
/// Split counts for speculative decode on prefill tiles (packing_pays, not decode_sized) in a family
/// whose prefill searches no splits: for each of the packings searched (pack_gqa values) whose grid
/// of 128-row tiles covers at most half of sm_count SMs, the power of two of splits that gives every
/// SM a block and half of it; at most 128 and one split per 128 keys. {1} and those.
std::vector<int> short_grid_splits(const problem& p, const std::vector<int>& packings, int sm_count);

/// The space of exactly one config.
search_space only(const tile_config& c);

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
