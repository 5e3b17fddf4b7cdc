#include "report/export.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/csv.hpp"
#include "report/json_report.hpp"

namespace attn {

int64_t seq_bucket(int64_t n) {
  int64_t b = 1;
  while (b < n) b *= 2;
  return b;
}

std::vector<const problem_field*> export_key_fields() {
  std::vector<const problem_field*> out;
  for (const auto& f : problem_fields())
    if (f.export_key > 0) out.push_back(&f);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->export_key < b->export_key; });
  if (out.size() != export_key_field_count)
    throw std::logic_error("export_key_fields: export_key_field_count disagrees with the field list");
  return out;
}

const problem_field& export_bucket_field() {
  for (const auto& f : problem_fields())
    if (f.export_bucket) return f;
  throw std::logic_error("export_bucket_field: the field list has no bucket field");
}

std::string export_key_text(const problem& p) {
  std::string out;
  for (const problem_field* f : export_key_fields()) out += f->get(p) + ',';
  return out;
}

bool export_key_matches(const export_entry& e, const problem& p) {
  const int64_t n = std::stoll(export_bucket_field().get(p));
  return export_key_text(e.key) == export_key_text(p) && n > e.seq_min && n <= e.seq_max && p.kv_len > e.kv_min &&
         p.kv_len <= e.kv_max;
}

tile_config fallback_config(int head_dim) {
  // Both passed on every test shape and stay within sm_80's shared memory and the register budget.
  return head_dim <= 128 ? tile_config{128, 64, 4, 2} : tile_config{64, 64, 4, 1};
}

std::vector<export_entry> export_entries(const std::vector<best_row>& rows) {
  using key_t = std::tuple<std::string, int, int, int, std::string, int64_t, int64_t>;
  std::vector<key_t> order;
  std::map<key_t, std::vector<const record*>> groups;
  for (const auto& row : rows) {
    const record& b = row.best;
    const key_t key{b.device.name, b.device.cc_major, b.device.cc_minor, b.device.sm_count,
                    export_key_text(b.shape), seq_bucket(std::stoll(export_bucket_field().get(b.shape))),
                    seq_bucket(b.shape.kv_len)};
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&b);
  }
  std::vector<export_entry> out;
  for (const auto& key : order) {
    const auto& group = groups[key];
    // (family, config) -> (wins, best TFLOPS)
    std::map<std::string, std::pair<int, double>> votes;
    auto id = [](const record* r) { return r->family + " " + config_name(*r); };
    for (const record* r : group) {
      auto& v = votes[id(r)];
      ++v.first;
      v.second = std::max(v.second, r->tflops);
    }
    const record* chosen = group.front();
    for (const record* r : group) {
      const auto& a = votes[id(r)];
      const auto& c = votes[id(chosen)];
      if (a.first > c.first || (a.first == c.first && a.second > c.second)) chosen = r;
    }
    export_entry e;
    e.device = chosen->device.name;
    e.cc_major = chosen->device.cc_major;
    e.cc_minor = chosen->device.cc_minor;
    e.sm_count = chosen->device.sm_count;
    for (const problem_field* f : export_key_fields()) f->set(e.key, f->get(chosen->shape));
    e.seq_max = std::get<5>(key);
    e.seq_min = e.seq_max / 2;
    e.kv_max = std::get<6>(key);
    e.kv_min = e.kv_max / 2;
    e.family = chosen->family;
    e.config = chosen->config;
    if (chosen->shape.pass == attention_pass::bwd) e.backward = chosen->backward;
    e.tflops = votes[id(chosen)].second;
    e.shapes = static_cast<int>(group.size());
    out.push_back(e);
  }
  return out;
}

std::string variant_name(const export_entry& e) { return e.backward ? name(*e.backward) : name(e.config); }

std::string export_csv(const std::vector<export_entry>& entries) {
  std::string out = "device,cc,sm_count,";
  for (const problem_field* f : export_key_fields()) out += fmt::format("{},", f->name);
  out += "seq_min_exclusive,seq_max,kv_min_exclusive,kv_max,family,block_m,block_n,warps,stages,knob,splits,pack_gqa,"
         "tflops,tuned_shapes,variant\n";
  for (const auto& e : entries) {
    out += fmt::format("{},{}.{},{},", csv_field(e.device, true), e.cc_major, e.cc_minor, e.sm_count);
    for (const problem_field* f : export_key_fields()) out += csv_field(f->get(e.key)) + ',';
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{:.1f},{},{}\n", e.seq_min, e.seq_max, e.kv_min, e.kv_max,
                       csv_field(e.family),
                       e.config.block_m, e.config.block_n, e.config.warps, e.config.stages, e.config.knob,
                       e.config.splits, e.config.pack_gqa, e.tflops, e.shapes, variant_name(e));
  }
  // Lines starting with '#' are comments (fast-cpp-csv-parser: single_line_comment<'#'>).
  return fmt::format("# fallback: head_dim <= 128 fa2 {}, head_dim > 128 fa2 {}\n", name(fallback_config(128)),
                     name(fallback_config(256))) +
         out;
}

namespace {

// A field's value as JSON: a number, a boolean or a string, by its type.
nlohmann::ordered_json typed_json(const problem_field& f, const problem& p) {
  const std::string text = f.get(p);
  switch (f.type) {
    case field_type::integer: return std::stoll(text);
    case field_type::flag: return text == "1";
    case field_type::real: return std::stod(text);
    case field_type::text: break;
  }
  return text;
}

}  // namespace

std::string export_json(const std::vector<export_entry>& entries) {
  using nlohmann::ordered_json;
  auto cfg = [](const std::string& family, const tile_config& c) {
    return ordered_json{{"family", family}, {"block_m", c.block_m}, {"block_n", c.block_n},
                        {"warps", c.warps},   {"stages", c.stages},   {"knob", c.knob},
                        {"splits", c.splits}, {"pack_gqa", c.pack_gqa}};
  };
  ordered_json list = ordered_json::array();
  for (const auto& e : entries) {
    ordered_json j = {{"device", e.device}, {"cc", fmt::format("{}.{}", e.cc_major, e.cc_minor)}, {"sm_count", e.sm_count}};
    for (const problem_field* f : export_key_fields()) j[f->name] = typed_json(*f, e.key);
    j["seq_min_exclusive"] = e.seq_min;
    j["seq_max"] = e.seq_max;
    j["kv_min_exclusive"] = e.kv_min;
    j["kv_max"] = e.kv_max;
    j["config"] = cfg(e.family, e.config);
    j["config"]["variant"] = variant_name(e);
    j["tflops"] = std::round(e.tflops * 10) / 10;
    j["tuned_shapes"] = e.shapes;
    list.push_back(std::move(j));
  }
  ordered_json key = {"device", "cc", "sm_count"};
  for (const problem_field* f : export_key_fields()) key.push_back(f->name);
  key.push_back("seq_len in (seq_min_exclusive, seq_max]");
  key.push_back("kv_len in (kv_min_exclusive, kv_max]");
  const ordered_json doc = {
      {"schema", 1},
      {"key", key},
      {"fallback",
       {{"head_dim_le_128", cfg("fa2", fallback_config(128))}, {"head_dim_gt_128", cfg("fa2", fallback_config(256))}}},
      {"entries", list}};
  return json_text(doc);
}

namespace {

// text as a C++ string literal's contents: the header is C++ source, so a device name holding a
// quote or a backslash must not end the literal early, nor "??/" or "??=" become a trigraph
// (-std=c++14, -trigraphs): every '?' is written "\?".
std::string cpp_escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?') out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\{:03o}", c);
    else out += static_cast<char>(c);
  }
  return out;
}


// The header's pieces for the key fields: each field's member of `entry`, its value in a row and
// in the end marker, lookup()'s parameter, its test, and its part of the warning.
// older: the lookups of the key fields as they stood before the later ones (the first fields;
// then a window and softcap; then dv; then the pass), which pass the later fields' defaults, so
// code written against an older header keeps its meaning.
struct header_parts {
  std::string members, end_values, parameters, arguments, tests, warn_format, warn_arguments;
  std::string older;
};

const char* cpp_type(field_type t) {
  switch (t) {
    case field_type::text: return "const char*";
    case field_type::flag: return "bool";
    case field_type::real: return "double";
    case field_type::integer: break;
  }
  return "int";
}

// A key field's value in p as a C++ literal: "bf16" (escaped), true, 128.
std::string cpp_literal(const problem_field& f, const problem& p) {
  const std::string text = f.get(p);
  return f.type == field_type::text   ? fmt::format("\"{}\"", cpp_escaped(text))
         : f.type == field_type::flag ? std::string(text == "1" ? "true" : "false")
                                      : text;
}

header_parts key_parts() {
  header_parts h;
  for (const problem_field* f : export_key_fields()) {
    h.members += fmt::format("  {} {};\n", cpp_type(f->type), f->name);
    h.end_values += f->type == field_type::text ? "nullptr, " : f->type == field_type::flag ? "false, " : "0, ";
    h.parameters += fmt::format("{} {}, ", cpp_type(f->type), f->name);
    h.arguments += fmt::format("{}, ", f->name);
    h.tests += f->type == field_type::text ? fmt::format(" && std::strcmp(e->{0}, {0}) == 0", f->name)
                                           : fmt::format(" && e->{0} == {0}", f->name);
    h.warn_format += fmt::format(" {}=%{}", f->name, f->type == field_type::text   ? "s"
                                                     : f->type == field_type::real ? "g"
                                                                                   : "d");
    h.warn_arguments += f->type == field_type::flag ? fmt::format(", {} ? 1 : 0", f->name) : fmt::format(", {}", f->name);
  }
  // One pair of overloads per older schema level. From dv's level on, lookup() takes both lengths:
  // a self-attention shorthand there, (..., head_dim_v, seq_len), would read an older call's
  // (..., seq_len, kv_len) as a head dim and a length.
  std::vector<int> levels;
  for (const problem_field* f : export_key_fields()) levels.push_back(f->since_schema);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (std::size_t i = 0; i + 1 < levels.size(); ++i) {
    std::string parameters, arguments, defaults;
    for (const problem_field* f : export_key_fields()) {
      if (f->since_schema <= levels[i]) {
        parameters += fmt::format("{} {}, ", cpp_type(f->type), f->name);
        arguments += fmt::format("{}, ", f->name);
      } else {
        arguments += cpp_literal(*f, problem{}) + ", ";
        defaults += fmt::format("{}{} {}", defaults.empty() ? "" : ", ", f->name, f->get(problem{}));
      }
    }
    h.older += fmt::format(R"(
// As before schema {level}'s key fields ({defaults}).
inline config lookup(const char* device, int cc_major, int cc_minor, int sm_count, {parameters}long long seq_len,
                     long long kv_len, bool* fell_back = nullptr) {{
  return lookup(device, cc_major, cc_minor, sm_count, {arguments}seq_len, kv_len, fell_back);
}}
)",
                           fmt::arg("level", levels[i + 1]), fmt::arg("defaults", defaults),
                           fmt::arg("parameters", parameters), fmt::arg("arguments", arguments));
    if (levels[i] < value_dim_schema)
      h.older += fmt::format(R"(inline config lookup(const char* device, int cc_major, int cc_minor, int sm_count, {parameters}long long seq_len,
                     bool* fell_back = nullptr) {{
  return lookup(device, cc_major, cc_minor, sm_count, {arguments}seq_len, seq_len, fell_back);
}}
)",
                             fmt::arg("parameters", parameters), fmt::arg("arguments", arguments));
  }
  return h;
}

std::string row_values(const export_entry& e) {
  std::string out;
  for (const problem_field* f : export_key_fields()) out += cpp_literal(*f, e.key) + ", ";
  return out;
}

}  // namespace

std::string export_header(const std::vector<export_entry>& entries, const std::string& source) {
  std::string rows;
  for (const auto& e : entries)
    rows += fmt::format("    {{\"{}\", {}, {}, {}, {}{}, {}, {}, {}LL, {{\"{}\", {}, {}, {}, {}{}}}}},\n",
                        cpp_escaped(e.device), e.cc_major, e.cc_minor, e.sm_count, row_values(e), e.seq_min, e.seq_max,
                        e.kv_min, e.kv_max, cpp_escaped(e.family),
                        e.config.block_m, e.config.block_n, e.config.warps, e.config.stages,
                        e.backward ? fmt::format(", {}, {}, {}, \"{}\"", e.config.knob, e.config.splits,
                                                 e.config.pack_gqa, name(*e.backward))
                        : has_decode_axes(e.config)
                            ? fmt::format(", {}, {}, {}", e.config.knob, e.config.splits, e.config.pack_gqa)
                        : e.config.knob ? fmt::format(", {}", e.config.knob)
                                        : "");
  // The backward's fallback where the key has the pass: lookup() of an untuned pass bwd shape (dK
  // and dV in two launches above 128, Q's or V's head dim: fallback_backwards' rule).
  bool keyed_on_pass = false;
  for (const problem_field* f : export_key_fields()) keyed_on_pass |= std::string(f->name) == "pass";
  const backward_config bwd_small = fallback_backwards(128).front(), bwd_large = fallback_backwards(256).front();
  auto backward_literal = [](const backward_config& c) {
    return fmt::format("config{{\"fa2\", {}, {}, {}, {}, 0, 1, 0, \"{}\"}}", c.kv_block_m, c.kv_block_n, c.kv_warps,
                       c.kv_stages, name(c));
  };
  const std::string backward_fallback =
      keyed_on_pass ? fmt::format("  if (std::strcmp(pass, \"bwd\") == 0)\n"
                                  "    return (head_dim_v > head_dim ? head_dim_v : head_dim) <= 128 ? {} : {};\n",
                                  backward_literal(bwd_small), backward_literal(bwd_large))
                    : std::string();
  const header_parts key = key_parts();
  const tile_config small = fallback_config(128), large = fallback_config(256);
  return fmt::format(R"(// Generated by `attn-tune export --format header` from {source}. Do not edit.
// Tuned launch configs for a runtime's dispatcher: each names its kernel family ("fa2": the
// mma.sync kernel; "wgmma": the Hopper kernel, warps = block_m/16 [+ 4 for a producer
// warpgroup]; "hopper": the TMA kernel; "mfma": AMD). lookup() returns the tuned config of the
// buckets (seq_min, seq_max] holding seq_len and (kv_min, kv_max] holding kv_len (N_kv; left out,
// seq_len) for this device and key; for anything not tuned it
// returns the fa2 fallback (BLOCK_M 128, BLOCK_N 64, 4 warps, 2 stages up to head dim 128; 64,
// 64, 4, 1 above) and warns on stderr, unless ATTN_TUNED_QUIET is defined.
#pragma once
#include <cstdio>
#include <cstring>

namespace attn_tuned {{

struct config {{
  const char* family;
  int block_m, block_n, warps, stages;
  int knob = 0;  // the family's own axis (mfma: waves per EU, fa2: loader); 0 = not set
  int splits = 1;  // split-KV (fa2, hopper): blocks sharing a row block's keys (1: none)
  int pack_gqa = 0;  // fa2, hopper: 1 packs the query heads of a K/V head into one tile
  // pass bwd: the backward's whole variant, "kv_m32_n64_w4_s2-q_m64_n64_w4_s2" (the dK/dV kernel's
  // tile, as block_m ... stages, then the dQ kernel's); nullptr for the forward
  const char* variant = nullptr;
}};

struct entry {{
  const char* device;
  int cc_major, cc_minor, sm_count;
{members}  long long seq_min_exclusive, seq_max;
  long long kv_min_exclusive, kv_max;  // the bucket of N_kv (decode); an older export's: every N_kv
  config cfg;
}};

inline constexpr entry entries[] = {{
{rows}    {{nullptr, 0, 0, 0, {end_values}0, 0, 0, 0, {{nullptr, 0, 0, 0, 0}}}},  // end marker
}};

inline constexpr config fallback(int head_dim) {{
  return head_dim <= 128 ? config{{"fa2", {sbm}, {sbn}, {sw}, {ss}}} : config{{"fa2", {lbm}, {lbn}, {lw}, {ls}}};
}}

// seq_len: the query length (N_q); kv_len: the K/V length (N_kv; a decode step's cache).
inline config lookup(const char* device, int cc_major, int cc_minor, int sm_count, {parameters}long long seq_len,
                     long long kv_len, bool* fell_back = nullptr) {{
  for (const entry* e = entries; e->device != nullptr; ++e) {{
    if (std::strcmp(e->device, device) == 0 && e->cc_major == cc_major && e->cc_minor == cc_minor &&
        e->sm_count == sm_count{tests} && seq_len > e->seq_min_exclusive && seq_len <= e->seq_max &&
        kv_len > e->kv_min_exclusive && kv_len <= e->kv_max) {{
      if (fell_back) *fell_back = false;
      return e->cfg;
    }}
  }}
  if (fell_back) *fell_back = true;
#ifndef ATTN_TUNED_QUIET
  std::fprintf(stderr,
               "attn_tuned: no tuned config for %s sm_%d%d (%d SMs){warn_format} N=%lld N_kv=%lld; "
               "using the fallback\n",
               device, cc_major, cc_minor, sm_count{warn_arguments}, seq_len, kv_len);
#endif
{backward_fallback}  return fallback(head_dim);
}}

// The key has no head counts, so a bucket's config may pack the query heads of a GQA group
// (pack_gqa 1) that a problem of other heads cannot: MHA (heads == kv_heads), a hopper group over
// 64 heads, a packed batch of sequences (varlen). For such a problem this returns the same tile
// unpacked and unsplit (its splits were chosen for the packed grid), as attn-tune's library does;
// anything else unchanged. Call it on lookup()'s config before launching.
inline config for_heads(config c, int heads, int kv_heads, bool varlen = false) {{
  const bool can_pack = kv_heads > 0 && heads > kv_heads && heads % kv_heads == 0 &&
                        (std::strcmp(c.family, "hopper") != 0 || heads / kv_heads <= 64);
  if ((c.pack_gqa != 0 && !can_pack) || (varlen && (c.pack_gqa != 0 || c.splits != 1))) {{
    c.pack_gqa = 0;
    c.splits = 1;
  }}
  return c;
}}

{older}
}}  // namespace attn_tuned
)",
                     fmt::arg("source", cpp_escaped(source)), fmt::arg("rows", rows),
                     fmt::arg("backward_fallback", backward_fallback),
                     fmt::arg("members", key.members), fmt::arg("end_values", key.end_values),
                     fmt::arg("parameters", key.parameters), fmt::arg("arguments", key.arguments), fmt::arg("tests", key.tests),
                     fmt::arg("older", key.older),
                     fmt::arg("warn_format", key.warn_format), fmt::arg("warn_arguments", key.warn_arguments), fmt::arg("sbm", small.block_m),
                     fmt::arg("sbn", small.block_n), fmt::arg("sw", small.warps), fmt::arg("ss", small.stages),
                     fmt::arg("lbm", large.block_m), fmt::arg("lbn", large.block_n), fmt::arg("lw", large.warps),
                     fmt::arg("ls", large.stages));
}

}  // namespace attn
