// Issue 20, item 1: every field of a tuning's question misses the database, through the key
// builder the tuner uses (the command line's options -> searched_space_of -> make_tuning_key), and
// the same question hits. Editing any kernel source file a family includes changes that family's
// hash, and so misses too.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/db_support.hpp"
#include "codegen/family.hpp"
#include "codegen/kernel_sources.hpp"
#include "db/tuned_db.hpp"
#include "db/tuning_key.hpp"
#include "parsed_options.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

// The command line every case starts from: each field given, so that each can be changed alone.
const std::vector<std::string> base_args = {
    "--shape", "2,8,256,64", "--kv-heads", "4", "--kv-len", "512", "--dtype", "bf16", "--layout", "bhsd",
    "--family", "fa2", "--space", "block_m=64,128", "block_n=64", "warps=4", "stages=2", "--search", "screen",
    "--seed", "1", "--inputs", "normal", "--compile-only", "--arch", "sm_90a"};

device_desc base_device() {
  device_desc d;
  d.name = "NVIDIA H200";
  d.arch = "sm_90a";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.cuda_version = "13.0, driver 580.65";
  d.nvrtc_version = "13.0";
  return d;
}

// The key the tuner builds for this command line on this device with these kernel sources.
tuning_key key_of(const std::vector<std::string>& args, const device_desc& d = base_device(),
                  const kernel_sources& sources = kernel_sources::embedded()) {
  const options opt = testing::parsed(args);
  return make_tuning_key(d, opt.problem, searched_space_of(opt), sources);
}

// args with `option`'s value(s) replaced (or the option added when it is not there).
std::vector<std::string> with(const std::vector<std::string>& args, const std::string& option,
                              const std::vector<std::string>& values) {
  std::vector<std::string> out;
  bool replaced = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != option) {
      out.push_back(args[i]);
      continue;
    }
    out.push_back(option);
    out.insert(out.end(), values.begin(), values.end());
    replaced = true;
    while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;  // the old value(s)
  }
  if (!replaced) {
    out.push_back(option);
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}
std::vector<std::string> with(const std::string& option, const std::vector<std::string>& values) {
  return with(base_args, option, values);
}

std::vector<record> one_tuning() {
  std::vector<record> rows(1);
  rows[0].family = "fa2";
  rows[0].config = parse_config_name("m64_n64_w4_s2");
  rows[0].status = status::ok;
  rows[0].measured = measurement::full;
  rows[0].median_ms = 1.0;
  rows[0].rank = 1;
  return rows;
}

class key_fields : public ::testing::Test {
 protected:
  void SetUp() override {
    db.emplace(tuned_db::open(dir / "tuned.sqlite"));
    db->put(key_of(base_args), one_tuning(), "2026-12-01 08:00:00");
    ASSERT_TRUE(db->find(key_of(base_args)).has_value()) << "the same question must hit";
  }
  void expect_miss(const tuning_key& k, const std::string& what) {
    EXPECT_FALSE(db->find(k).has_value()) << what << " changed, yet the database answered";
  }
  temp_dir dir{"attn-key-fields"};
  std::optional<tuned_db> db;
};

TEST_F(key_fields, the_same_command_line_hits_again_and_again) {
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(db->find(key_of(base_args)).has_value());
  // Options that do not change the question do not change the key.
  EXPECT_TRUE(db->find(key_of(with("--top", {"5"}))).has_value());
  EXPECT_TRUE(db->find(key_of(with("--jobs", {"1"}))).has_value());
}

TEST_F(key_fields, every_shape_field_misses) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> changes = {
      {"batch", {"--shape", "3,8,256,64"}},   {"heads", {"--shape", "2,16,256,64"}},
      {"q_len", {"--shape", "2,8,128,64"}},   {"head_dim", {"--shape", "2,8,256,128"}},
      {"kv_heads", {"--kv-heads", "2"}},      {"kv_len", {"--kv-len", "1024"}},
      {"dtype", {"--dtype", "fp16"}},         {"layout", {"--layout", "bshd"}},
  };
  for (const auto& [what, change] : changes) {
    const tuning_key k = key_of(with(change[0], {change[1]}));
    expect_miss(k, what);
  }
  std::vector<std::string> causal = base_args;
  causal.push_back("--causal");
  EXPECT_TRUE(key_of(causal).shape.causal);
  expect_miss(key_of(causal), "causal");
}

TEST_F(key_fields, the_space_the_search_and_the_inputs_miss) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> changes = {
      {"--space", {"block_m=64", "block_n=64", "warps=4", "stages=2"}},
      {"--space", {"block_m=64,128", "block_n=64,128", "warps=4", "stages=2"}},
      {"--space", {"block_m=64,128", "block_n=64", "warps=4,8", "stages=2"}},
      {"--space", {"block_m=64,128", "block_n=64", "warps=4", "stages=2,3"}},
      {"--search", {"exhaustive"}},
      {"--search", {"halving"}},
      {"--inputs", {"wide"}},
      {"--inputs", {"sink"}},
      {"--family", {"wgmma"}},
  };
  for (const auto& [option, values] : changes)
    expect_miss(key_of(with(option, values)), fmt::format("{} {}", option, fmt::join(values, " ")));
  // --configs instead of the space: another question, and each list another.
  std::vector<std::string> no_space;
  const auto& args = base_args;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--space") {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;
      continue;
    }
    no_space.push_back(args[i]);
  }
  std::vector<std::string> configs = with(no_space, "--configs", {"m64_n64_w4_s2"});
  expect_miss(key_of(configs), "--configs");
  db->put(key_of(configs), one_tuning(), utc_now());
  EXPECT_TRUE(db->find(key_of(configs)).has_value());
  expect_miss(key_of(with(no_space, "--configs", {"m128_n64_w4_s2"})), "the --configs list");
}

// Axes left to the heuristic name the values it chose for the problem: an entry tuned when the
// rule chose others (speculative decode over groups of 8 searched unpacked, before packing_pays)
// misses.
TEST_F(key_fields, the_heuristics_decode_axes_are_in_the_key) {
  const std::vector<std::string> spec = {"--shape", "16,64,16,128", "--kv-heads", "8", "--kv-len", "8192", "--causal",
                                         "--family", "hopper", "--compile-only", "--arch", "sm_90a"};
  const tuning_key k = key_of(spec);
  EXPECT_NE(k.space.find("; hopper auto: splits=1 pack_gqa=0,1"), std::string::npos) << k.space;
  tuning_key before = k;
  before.space = before.space.substr(0, before.space.find("; hopper auto:"));
  db->put(before, one_tuning(), utc_now());
  expect_miss(k, "the heuristic's packing");
  // Axes --space names are in the space's text already.
  const tuning_key named = key_of(with(spec, "--space", {"splits=1", "pack_gqa=0,1"}));
  EXPECT_EQ(named.space.find("auto:"), std::string::npos) << named.space;
}

// hopper's schedules for softcap and windows (knob_extras) are in the key where they are searched,
// so a softcap tuning from before they were is not taken for one with them; other keys keep their text.
TEST_F(key_fields, the_schedules_added_for_a_problem_are_in_the_key) {
  const std::vector<std::string> hopper = {"--shape", "2,8,256,64", "--causal", "--family", "hopper",
                                           "--compile-only", "--arch", "sm_90a"};
  const std::string plain = key_of(hopper).space;
  EXPECT_EQ(plain.find("adds"), std::string::npos) << plain;
  const std::string softcap = key_of(with(hopper, "--softcap", {"50"})).space;
  EXPECT_NE(softcap.find("; hopper adds schedule=67,69"), std::string::npos) << softcap;
  const std::string window = key_of(with(hopper, "--window", {"64,0"})).space;
  EXPECT_NE(window.find("; hopper adds schedule=131,133"), std::string::npos) << window;
  const std::string named = key_of(with(with(hopper, "--softcap", {"50"}), "--space", {"schedule=3"})).space;
  EXPECT_EQ(named.find("adds"), std::string::npos) << named;
}

TEST_F(key_fields, a_random_search_misses_on_its_samples_and_its_seed) {
  const auto random = with("--search", {"random"});
  expect_miss(key_of(random), "--search random");
  const auto eight = with(random, "--samples", {"8"});
  db->put(key_of(eight), one_tuning(), utc_now());
  EXPECT_TRUE(db->find(key_of(eight)).has_value());
  expect_miss(key_of(with(eight, "--samples", {"9"})), "--samples");
  expect_miss(key_of(with(eight, "--seed", {"2"})), "--seed of a random search");
}

TEST_F(key_fields, every_device_and_driver_field_misses) {
  const std::vector<std::pair<std::string, std::function<void(device_desc&)>>> changes = {
      {"device name", [](device_desc& d) { d.name = "NVIDIA H100 80GB HBM3"; }},
      {"cc major", [](device_desc& d) { d.cc_major = 10; }},
      {"cc minor", [](device_desc& d) { d.cc_minor = 1; }},
      {"SM count", [](device_desc& d) { d.sm_count = 114; }},
      {"CUDA runtime and driver", [](device_desc& d) { d.cuda_version = "13.0, driver 580.82"; }},
      {"NVRTC", [](device_desc& d) { d.nvrtc_version = "13.1"; }},
  };
  for (const auto& [what, change] : changes) {
    device_desc d = base_device();
    change(d);
    expect_miss(key_of(base_args, d), what);
  }
}

// Every file a family's hash covers: editing it changes that family's hash (and the key misses);
// editing a file no family includes changes none.
TEST_F(key_fields, editing_any_source_file_of_each_family_misses) {
  const kernel_sources embedded = kernel_sources::embedded();
  for (const char* family : {"fa2", "wgmma", "hopper"}) {
    const kernel_family& f = find_family(family);
    ASSERT_FALSE(f.source_files.empty()) << family;
    auto args = with("--family", {family});
    if (std::string(family) == "hopper") args = with(args, "--space", {"block_m=128", "block_n=64", "warps=8", "stages=2"});
    const tuning_key original = key_of(args, base_device(), embedded);
    db->put(original, one_tuning(), utc_now());
    ASSERT_TRUE(db->find(original).has_value()) << family;
    for (const std::string& file : f.source_files) {
      auto files = embedded.files();
      bool found = false;
      for (auto& sf : files)
        if (sf.name == file) sf.text += "\n// an edit\n", found = true;
      ASSERT_TRUE(found) << family << " names " << file << ", which is not among the kernel sources";
      const kernel_sources edited = kernel_sources::from_files(files, "edited");
      EXPECT_NE(kernel_hashes({family}, edited), kernel_hashes({family}, embedded)) << family << ": " << file;
      expect_miss(key_of(args, base_device(), edited), fmt::format("{}'s file {}", family, file));
    }
  }
}

// The hash is of each file's name and text: a family's hash does not move when another family's
// own file is edited, and does move when one of its files is renamed.
TEST(kernel_hashes, follow_each_familys_files_only) {
  const kernel_sources embedded = kernel_sources::embedded();
  const auto& fa2 = find_family("fa2").source_files;
  const auto& wgmma = find_family("wgmma").source_files;
  std::string only_wgmma;
  for (const auto& f : wgmma)
    if (std::find(fa2.begin(), fa2.end(), f) == fa2.end()) only_wgmma = f;
  ASSERT_FALSE(only_wgmma.empty());
  auto files = embedded.files();
  for (auto& f : files)
    if (f.name == only_wgmma) f.text += "\n// wgmma only\n";
  const kernel_sources edited = kernel_sources::from_files(files, "edited");
  EXPECT_EQ(kernel_hashes({"fa2"}, edited), kernel_hashes({"fa2"}, embedded));
  EXPECT_NE(kernel_hashes({"wgmma"}, edited), kernel_hashes({"wgmma"}, embedded));
  // The same text under another name is another source.
  files = embedded.files();
  for (auto& f : files)
    if (f.name == fa2.front()) f.name = "renamed/" + f.name;
  auto renamed = files;
  renamed.push_back({fa2.front(), ""});  // the family's file still there, but empty
  EXPECT_NE(kernel_hashes({"fa2"}, kernel_sources::from_files(renamed, "renamed")), kernel_hashes({"fa2"}, embedded));
}

}  // namespace
}  // namespace attn
