#include "db/tuning_key.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/family.hpp"
#include "core/config.hpp"

namespace attn {

namespace {

std::string describe_searched(const searched_space& s) {
  std::string out = to_string(s.search);
  if (s.search == search_kind::random) out += fmt::format(" {} seed {}", s.samples, s.seed);
  if (!s.configs.empty()) return fmt::format("{}; {}: configs={}", out, fmt::join(s.families, ","), fmt::join(s.configs, ","));
  for (size_t i = 0; i < s.families.size() && i < s.spaces.size(); ++i)
    out += fmt::format("; {}: {}", s.families[i], space_text(s.spaces[i]));
  return out;
}

}  // namespace

std::string describe_space(const searched_space& s) {
  std::string out = describe_searched(s);
  if (s.inputs != input_kind::normal) out += fmt::format("; inputs {}", to_string(s.inputs));
  if (s.objective != objective::time) out += fmt::format("; objective {}", to_string(s.objective));
  if (s.regime != timing_regime::burst) out += fmt::format("; regime {}", to_string(s.regime));
  return out;
}

std::string kernel_hashes(const std::vector<std::string>& families, const kernel_sources& sources) {
  std::string out;
  for (const auto& f : families)
    out += fmt::format("{}{}={:016x}", out.empty() ? "" : ",", f, sources.hash_of(find_family(f).source_files));
  return out;
}

tuning_key make_tuning_key(const device_desc& device, const problem& s, const searched_space& space,
                           const kernel_sources& sources) {
  tuning_key k;
  k.device = device.name;
  k.cc = fmt::format("{}.{}", device.cc_major, device.cc_minor);
  k.sm_count = device.sm_count;
  k.cuda_version = device.cuda_version;
  k.nvrtc_version = device.nvrtc_version;
  k.kernel_hashes = kernel_hashes(space.families, sources);
  k.shape = s;
  k.space = describe_space(space);
  // Axes left to the heuristic ("auto") name the values it chose for this problem, so an entry
  // tuned under another rule (packing searched for fewer shapes, say) is not taken for this one.
  for (size_t i = 0; space.configs.empty() && i < space.families.size() && i < space.spaces.size(); ++i) {
    const search_space& f = space.spaces[i];
    if (f.decode_axes && (f.splits.empty() || f.pack_gqa.empty())) {  // some left to it
      const search_space r = for_problem(f, s, device.sm_count);
      k.space += fmt::format("; {} auto: splits={} pack_gqa={}", space.families[i], fmt::join(r.splits, ","),
                             fmt::join(r.pack_gqa, ","));
    }
    const std::vector<int> extra = knob_extras_for(f, s);
    if (!extra.empty()) k.space += fmt::format("; {} adds {}={}", space.families[i], f.knob_name, fmt::join(extra, ","));
  }
  return k;
}

}  // namespace attn
