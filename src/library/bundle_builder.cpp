#include "library/bundle_builder.hpp"

#include <set>

#include <fmt/format.h>

#include "codegen/compile_pool.hpp"
#include "report/export.hpp"
#include "library/errors.hpp"

namespace attn {

std::vector<bundle_target> bundle_targets(const tuned_table& table, const std::string& arch,
                                          std::vector<std::string>& skipped) {
  const resource_limits limits = limits_for_arch(arch);
  std::vector<bundle_target> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& family_name, const tile_config& c, const problem& s) {
    const kernel_family& f = find_family(family_name);
    const std::string label = fmt::format("{} {} ({})", family_name, name(c), describe(s));
    if (f.backend != backend::cuda || !runs_on(f, limits.cc_major, limits.cc_minor)) {
      skipped.push_back(fmt::format("{}: the family does not run on {}", label, arch));
      return;
    }
    if (auto why = f.reject_reason(c, s, limits)) {
      skipped.push_back(fmt::format("{}: {}", label, *why));
      return;
    }
    const std::string key = instantiation_key(f, c, s);
    if (seen.insert(family_name + " " + key).second) out.push_back({&f, c, s, key});
  };
  std::vector<problem> kinds;  // one problem per export key (dtype, head dim, causal), for the fallbacks
  auto note_kind = [&](const problem& s) {
    for (const auto& k : kinds)
      if (export_key_text(k) == export_key_text(s)) return;
    kinds.push_back(s);
  };
  bool any = false;
  // A backward variant is not bundled yet: the library compiles it with NVRTC on first use.
  auto backward = [&](const problem& s, const std::string& family, const std::string& variant) {
    if (s.pass != attention_pass::bwd) return false;
    skipped.push_back(fmt::format("{} {} ({}): backward variants are not bundled yet (the library compiles them "
                                  "with NVRTC on first use)",
                                  family, variant, describe(s)));
    return true;
  };
  for (const auto& e : table.exact()) {
    if (e.device.cc_major != limits.cc_major || e.device.cc_minor != limits.cc_minor) continue;
    any = true;
    if (backward(e.shape, e.family, name(e.backward))) continue;
    add(e.family, e.config, e.shape);
    note_kind(e.shape);
  }
  for (const auto& e : table.buckets()) {
    if (e.cc_major != limits.cc_major || e.cc_minor != limits.cc_minor) continue;
    any = true;
    if (backward(e.key, e.family, variant_name(e))) continue;
    problem s = e.key;
    s.q_len = s.kv_len = e.seq_max;
    if (e.kv_max != INT64_MAX) s.kv_len = e.kv_max;  // a decode bucket: its cache length
    if (has_decode_axes(e.config)) {
      // The key has no head counts (one head): a packed tile is built for a GQA problem (the head
      // counts are launch values, not the kernel's), and the same tile unpacked and unsplit, which
      // the library runs for a shape of the bucket that refuses those axes.
      add(e.family, without_decode_axes(e.config), s);
      if (e.config.pack_gqa != 0) s.heads = 2 * s.kv_heads;
    }
    add(e.family, e.config, s);
    note_kind(s);
  }
  if (!any)
    throw invalid_input(fmt::format("the table '{}' holds no configs tuned on a device of {} (cc {}.{})",
                                    table.origin(), arch, limits.cc_major, limits.cc_minor));
  for (const auto& s : kinds) add("fa2", fallback_config(static_cast<int>(s.head_dim)), s);
  return out;
}

bundle build_bundle(const tuned_table& table, const std::vector<bundle_target>& targets, const std::string& arch,
                    const compile_cache& cache) {
  bundle b;
  b.arch = arch;
  b.version = ATTN_TUNE_VERSION;
  b.table = table.text();
  for (const auto& t : targets) {
    b.source_hashes[t.family->name] = fmt::format("{:016x}", cache.kernels().hash_of(t.family->source_files));
    const auto compiled = compile_with_cache(cache, t.family->instantiation(t.config, t.shape), arch,
                                             t.family->compile_options, t.family->backend);
    if (!compiled.result.ok)
      throw compile_failure(fmt::format("{} {} ({}) does not compile for {}: {}", t.family->name, name(t.config),
                                        describe(t.shape), arch, compiled.result.log));
    b.kernels.push_back({t.family->name, t.key, name(t.config), t.family->shared_memory_bytes(t.config, t.shape),
                         compiled.result.cubin});
  }
  return b;
}

}  // namespace attn
