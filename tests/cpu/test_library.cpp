// libattn_tune's pure pieces: the bundle format (round trip, refusals), what a bundle holds, the
// config choice falling through a config the device cannot run, and the caller's strides.
#include <gtest/gtest.h>

#include "core/digest.hpp"

#include <array>

#include <fmt/format.h>

#include "codegen/compile_pool.hpp"
#include "library/bundle.hpp"
#include "library/bundle_builder.hpp"
#include "library/errors.hpp"
#include "codegen/kernel_args.hpp"
#include "library/tuned_table.hpp"

namespace attn {
namespace {

bundle sample_bundle() {
  bundle b;
  b.arch = "sm_90a";
  b.version = "0.1.0";
  b.source_hashes["fa2"] = fmt::format("{:016x}", kernel_sources::embedded().hash_of(fa2_family().source_files));
  b.table = "device,cc\n";
  b.kernels.push_back({"fa2", "0123456789abcdef", "m64_n64_w4_s2", 36864, std::string("\x7f" "ELF\0\n\nbinary", 13)});
  return b;
}

TEST(Bundle, RoundTrip) {
  const bundle b = parse_bundle(serialize_bundle(sample_bundle()), "t.attnb");
  EXPECT_EQ(b.arch, "sm_90a");
  EXPECT_EQ(b.table, "device,cc\n");
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].cubin, std::string("\x7f" "ELF\0\n\nbinary", 13));
  EXPECT_EQ(b.kernels[0].shared_memory_bytes, 36864);
  EXPECT_NE(b.find("fa2", "0123456789abcdef"), nullptr);
  EXPECT_EQ(b.find("wgmma", "0123456789abcdef"), nullptr);
  EXPECT_NO_THROW(check_bundle_target(b, "sm_90a", kernel_sources::embedded(), "t.attnb"));
}

TEST(Bundle, RefusesAnotherArchitecture) {
  const bundle b = sample_bundle();
  try {
    check_bundle_target(b, "sm_80", kernel_sources::embedded(), "t.attnb");
    FAIL();
  } catch (const bundle_error& e) {
    EXPECT_STREQ(e.what(), "bundle 't.attnb' holds cubins for sm_90a, but this device is sm_80: build one with "
                           "`attn-tune bundle --arch sm_80`");
  }
}

TEST(Bundle, RefusesOtherKernelSources) {
  bundle b = sample_bundle();
  b.source_hashes["fa2"] = "00000000deadbeef";
  EXPECT_THROW(check_bundle_target(b, "sm_90a", kernel_sources::embedded(), "t.attnb"), bundle_error);
}

// Why parse_bundle refuses `bytes` (as 't'), or "" when it reads them.
std::string bundle_refusal(const std::string& bytes) {
  try {
    parse_bundle(bytes, "t");
  } catch (const bundle_error& e) {
    return e.what();
  }
  return "";
}

TEST(Bundle, RefusesCorruptTruncatedAndOtherVersions) {
  std::string bytes = serialize_bundle(sample_bundle());
  std::string flipped = bytes;
  flipped[20] ^= 1;
  EXPECT_THROW(parse_bundle(flipped, "t"), bundle_error);
  EXPECT_THROW(parse_bundle(bytes.substr(0, bytes.size() - 3), "t"), bundle_error);
  EXPECT_THROW(parse_bundle("ELF", "t"), bundle_error);
  std::string v3 = bytes;
  v3[6] = '3';
  EXPECT_EQ(bundle_refusal(v3), "bundle 't' has format version 3; this library reads version 2 only: rebuild it with "
                                "this attn-tune (attn-tune bundle)");
}

// Issue 21, item 22: the checksum is XXH3-128, and a bundle of format 1 (FNV-1a) is refused saying so.
TEST(Bundle, TheChecksumIsXxh3AndFormat1IsRefused) {
  const std::string bytes = serialize_bundle(sample_bundle());
  EXPECT_EQ(bytes.rfind("ATTNB 2\n", 0), 0u);
  const size_t at = bytes.rfind("checksum ");
  EXPECT_EQ(bytes.substr(at + 9), xxh3_128_hex(std::string_view(bytes).substr(0, at)) + "\n");
  std::string v1 = bytes;
  v1[6] = '1';
  EXPECT_NE(bundle_refusal(v1).find("format version 1; this library reads version 2 only (version 1 was "
                                    "checksummed with FNV-1a): rebuild it"),
            std::string::npos)
      << bundle_refusal(v1);
}

TEST(BundleTargets, TableEntriesAndFallbacksForTheArch) {
  const tuned_table t = tuned_table::load(std::string(ATTN_TUNE_SOURCE_DIR) + "/tests/data/library_export.csv");
  std::vector<std::string> skipped;
  const auto targets = bundle_targets(t, "sm_90a", skipped);
  // Two H200 entries (D=128, D=64 causal) and the fallback of each; the A100 entry is not sm_90a's.
  ASSERT_EQ(targets.size(), 4u);
  EXPECT_EQ(name(targets[0].config), "m256_n64_w8_s2");
  EXPECT_EQ(name(targets[2].config), "m128_n64_w4_s2");
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(bundle_targets(t, "sm_80", skipped).size(), 2u);  // the A100's and its fallback
  EXPECT_THROW(bundle_targets(t, "sm_86", skipped), invalid_input);
}

TEST(ChooseConfig, AConfigTheDeviceCannotRunFallsThrough) {
  // A bucket entry with more shared memory than an sm_86 block has: the fallback runs instead.
  const tuned_table t = tuned_table::parse(
      "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,warps,stages,knob,"
      "tflops,tuned_shapes\n\"RTX\",8.6,84,bf16,128,0,512,1024,fa2,128,128,8,4,0,1,1\n",
      "t.csv");
  device_desc d;
  d.name = "RTX", d.cc_major = 8, d.cc_minor = 6, d.sm_count = 84;
  problem s;
  s.q_len = s.kv_len = 1024, s.head_dim = 128;
  tuned_choice c = choose_config(t, d, limits_for_arch("sm_86"), s);
  EXPECT_EQ(c.source, choice_source::fallback);
  EXPECT_EQ(name(c.config), "m64_n64_w4_s1");  // the export's fallback (102 KiB) does not fit either
  d.cc_minor = 0;
  d.name = "A100";
  c = choose_config(tuned_table(), d, limits_for_arch("sm_80"), s);
  EXPECT_EQ(name(c.config), "m128_n64_w4_s2");
}

// Issue 21, item 8: the major version is every digit but the last.
TEST(ArchLimits, MajorAndMinorOfEachArchitecture) {
  const std::pair<const char*, std::array<int, 3>> archs[] = {
      {"sm_80", {8, 0, 163}}, {"sm_86", {8, 6, 99}},  {"sm_89", {8, 9, 99}},
      {"sm_90a", {9, 0, 227}}, {"sm_100", {10, 0, 227}}, {"sm_120", {12, 0, 99}}};
  for (const auto& [arch, want] : archs) {
    const resource_limits l = limits_for_arch(arch);
    EXPECT_EQ(l.cc_major, want[0]) << arch;
    EXPECT_EQ(l.cc_minor, want[1]) << arch;
    EXPECT_EQ(l.shared_memory_per_block, want[2] * 1024) << arch;
    EXPECT_TRUE(runs_on(fa2_family(), l.cc_major, l.cc_minor)) << arch;
  }
  EXPECT_THROW(limits_for_arch("sm_9"), invalid_input);
  EXPECT_THROW(limits_for_arch("sm_"), invalid_input);
}

// A call's lengths come with it ("given": the C API's cache_seqlens, cu_seqlens_q): a shape tuned
// on lengths of its own serves it when every other field is the same, and only then.
TEST(ChooseConfig, ATunedShapeOfItsOwnLengthsServesLengthsGivenWithTheCall) {
  device_desc d;
  d.name = "NVIDIA H200", d.cc_major = 9, d.cc_minor = 0, d.sm_count = 132;
  problem packed;
  packed.batch = 4, packed.heads = 8, packed.kv_heads = 2, packed.q_len = packed.kv_len = 300, packed.head_dim = 128;
  packed.causal = true, packed.layout = layout::bshd, packed.seqlens = "300/17/0/255";
  problem cross = packed;
  cross.kv_len = 700, cross.kv_seqlens = "700/0/64/9";
  problem cache;
  cache.batch = 4, cache.heads = 32, cache.kv_heads = 8, cache.q_len = 1, cache.kv_len = 4096, cache.head_dim = 128;
  cache.kv_lens = "uniform:1:4096";
  const tile_config tuned_config{64, 64, 4, 2};
  std::vector<tuned_shape> exact;
  for (const problem& s : {packed, cross, cache}) exact.push_back({d, s, "fa2", tuned_config, 1.0});
  const tuned_table t = tuned_table::from_parts("t.csv", exact, {});
  auto given = [](problem s) {
    if (is_varlen(s)) s.seqlens = s.kv_seqlens = "given";
    else s.kv_lens = "given";
    return s;
  };
  for (const problem& tuned : {packed, cross, cache}) {
    const tuned_choice c = choose_config(t, d, limits_for_arch("sm_90a"), given(tuned));
    EXPECT_EQ(c.source, choice_source::tuned) << describe(tuned);
    EXPECT_EQ(name(c.config), "m64_n64_w4_s2") << describe(tuned);
  }
  problem longer = given(packed);  // another longest sequence: another shape
  longer.q_len = longer.kv_len = 301;
  EXPECT_EQ(t.candidates(d, longer).front().source, choice_source::fallback);
  problem dense = packed;  // the same sizes not packed: not the packed shape's
  dense.seqlens.clear();
  EXPECT_EQ(t.candidates(d, dense).front().source, choice_source::fallback);
  EXPECT_EQ(t.candidates(d, given(cross)).front().source, choice_source::tuned);
  problem other_heads = given(packed);
  other_heads.kv_heads = 8;
  EXPECT_EQ(t.candidates(d, other_heads).front().source, choice_source::fallback);
}

TEST(ChooseConfig, NoKernelForTheShapeIsUnsupported) {
  device_desc d;
  problem s;
  s.head_dim = 256;
  resource_limits tiny;
  tiny.shared_memory_per_block = 16 * 1024;
  tiny.cc_major = 8;
  EXPECT_THROW(choose_config(tuned_table(), d, tiny, s), unsupported_problem);
}

std::string table_error_of(const std::string& text, const std::string& what = "t.csv") {
  try {
    tuned_table::parse(text, what);
  } catch (const table_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TableReaders, AResultsCsvCutOrEditedAfterItsEndLineIsRefused) {
  const std::string path = std::string(ATTN_TUNE_SOURCE_DIR) + "/tests/data/export_fixture.csv";
  const std::string whole = read_file_text(path);
  EXPECT_FALSE(tuned_table::parse(whole, path).exact().empty());
  const size_t end_line = whole.rfind("#end,");
  ASSERT_NE(end_line, std::string::npos);
  // Cut at a row boundary: the end line is gone, which schema 4 always writes.
  const size_t cut = whole.rfind('\n', end_line - 2) + 1;
  EXPECT_NE(table_error_of(whole.substr(0, cut)).find("there is no '#end' line"), std::string::npos)
      << table_error_of(whole.substr(0, cut));
  std::string edited = whole;
  edited[whole.find("m256_n64_w8_s2")] = 'x';
  EXPECT_NE(table_error_of(edited).find("the file was changed or cut after it was written"), std::string::npos)
      << table_error_of(edited);
}

TEST(TableReaders, ABadExportFieldIsNamedWithItsLine) {
  const std::string header =
      "# fallback\ndevice,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,warps,"
      "stages,knob,tflops,tuned_shapes\n";
  const std::string good = "\"NVIDIA H200\",9.0,132,bf16,128,0,2048,4096,fa2,256,64,8,2,0,344.5,1\n";
  EXPECT_EQ(tuned_table::parse(header + good, "t.csv").buckets().size(), 1u);
  const std::string message =
      table_error_of(header + good + "\"NVIDIA H200\",9.0,132,bf16,128,0,2048,4096,fa2,25x,64,8,2,0,344.5,1\n");
  EXPECT_NE(message.find("'t.csv'"), std::string::npos) << message;
  EXPECT_NE(message.find("line 4"), std::string::npos) << message;
  EXPECT_NE(message.find("25x"), std::string::npos) << message;
  EXPECT_NE(table_error_of(header + "\"H\",9,132,bf16,128,0,2048,4096,fa2,256,64,8,2,0,1,1\n").find("'9' is not MAJOR.MINOR"),
            std::string::npos);
  EXPECT_NE(table_error_of(header + "\"H\",9.0,132,bf17,128,0,2048,4096,fa2,256,64,8,2,0,1,1\n").find("bf17"),
            std::string::npos);
  // An export from before the knob axis still reads (knob 0); one without block_m does not.
  const auto old = tuned_table::parse(
      "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,warps,stages,"
      "tflops,tuned_shapes\n\"H\",9.0,132,bf16,128,0,2048,4096,fa2,256,64,8,2,1,1\n",
      "old.csv");
  ASSERT_EQ(old.buckets().size(), 1u);
  EXPECT_EQ(old.buckets()[0].config.knob, 0);
  EXPECT_NE(table_error_of("device,cc,sm_count\n\"H\",9.0,132\n").find("lacks column 'dtype'"), std::string::npos);
}

TEST(TableReaders, ABadJsonExportIsNamed) {
  const std::string entry = R"({"device": "H", "cc": "9.0", "sm_count": 132, "dtype": "bf16", "head_dim": 64,
      "causal": true, "seq_min_exclusive": 512, "seq_max": 1024,
      "config": {"family": "fa2", "block_m": 64, "block_n": 64, "warps": 4, "stages": 2}})";
  const auto t = tuned_table::parse(R"({"entries": [)" + entry + "]}", "t.json");
  ASSERT_EQ(t.buckets().size(), 1u);
  EXPECT_EQ(name(t.buckets()[0].config), "m64_n64_w4_s2");
  EXPECT_TRUE(t.buckets()[0].key.causal);
  std::string message = table_error_of(R"({"entries": [)" + entry + "", "t.json");
  EXPECT_NE(message.find("cannot read export 't.json'"), std::string::npos) << message;
  message = table_error_of(R"({"entries": [{"device": "H"}]})", "t.json");
  EXPECT_NE(message.find("'cc'"), std::string::npos) << message;
  std::string wrong_type = entry;
  wrong_type.replace(wrong_type.find("\"head_dim\": 64"), 14, "\"head_dim\": \"64\"");
  message = table_error_of(R"({"entries": [)" + wrong_type + "]}", "t.json");
  EXPECT_NE(message.find("type must be number"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot read export 't.json'"), std::string::npos) << message;
}

TEST(ForwardArgs, ContiguousStridesPerLayout) {
  problem s;
  s.heads = 8, s.kv_heads = 2, s.q_len = 128, s.kv_len = 256, s.head_dim = 64;
  auto q = contiguous_strides(s, false);
  EXPECT_EQ(std::vector<int64_t>({q.batch, q.head, q.row}), std::vector<int64_t>({8 * 128 * 64, 128 * 64, 64}));
  s.layout = layout::bshd;
  auto kv = contiguous_strides(s, true);
  EXPECT_EQ(std::vector<int64_t>({kv.batch, kv.head, kv.row}), std::vector<int64_t>({256 * 2 * 64, 64, 2 * 64}));
  forward_tensors t{reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000),
                    reinterpret_cast<void*>(0x3000), reinterpret_cast<void*>(0x4000),
                    reinterpret_cast<float*>(0x5000)};
  const auto p = make_fwd_params(s, t, {}, {}, 0);
  EXPECT_EQ(p.kv_row_stride, 128);
  EXPECT_EQ(p.group, 4);
  EXPECT_FLOAT_EQ(p.softmax_scale, 0.125f);
}

}  // namespace
}  // namespace attn
