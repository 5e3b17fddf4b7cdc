// The tool's backward path without a GPU (issue 22, item 2): --pass on the command line, the
// backward's variants through the tuner's compile-only run and the families that run them,
// --configs of the run's pass, the isolated re-run's arguments, a sweep's passes and attn-bench's
// --pass. tests/gpu/test_backward_tune_gpu.cpp tunes them on the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/command_support.hpp"
#include "codegen/backward.hpp"
#include "invalid_input_message.hpp"
#include "library/bundle_builder.hpp"
#include "library/errors.hpp"
#include "library/tuned_table.hpp"
#include "measured_record.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "report/export.hpp"
#include "parsed_options.hpp"
#include "report/bench_name.hpp"
#include "run/orchestrator.hpp"
#include "run/tuner.hpp"
#include "sweep/sweep_file.hpp"
#include "verify/input_fill.hpp"

namespace attn {
namespace {

using testing::invalid_input_message;
using testing::parsed;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

problem small(attention_pass pass) {
  problem s;
  s.batch = 1, s.heads = 4, s.kv_heads = 2, s.q_len = 200, s.kv_len = 130, s.head_dim = 64, s.causal = true;
  s.pass = pass;
  return s;
}

TEST(pass_option, sets_the_problems_pass_and_is_fwd_when_not_given) {
  const options f = parsed({"--shape", "1,2,128,64"});
  EXPECT_EQ(f.problem.pass, attention_pass::fwd);
  EXPECT_FALSE(f.pass_given);
  for (const char* text : {"fwd", "bwd", "fwdbwd"}) {
    const options o = parsed({"--shape", "1,2,128,64", "--pass", text});
    EXPECT_EQ(to_string(o.problem.pass), text);
    EXPECT_TRUE(o.pass_given);
  }
  // The subcommands that take it read it too (sweep and check fall through to these options).
  EXPECT_EQ(parsed({"check", "--baseline", "b.csv", "--pass", "bwd"}).problem.pass, attention_pass::bwd);
  EXPECT_EQ(parsed({"sweep", "s.csv", "--pass", "fwdbwd"}).problem.pass, attention_pass::fwdbwd);
}

TEST(pass_option, a_bad_value_and_what_excludes_it_are_refused_naming_them) {
  const std::string bad = invalid_input_message([] { parsed({"--pass", "backward"}); });
  EXPECT_TRUE(contains(bad, "'backward'") && contains(bad, "fwd, bwd or fwdbwd")) << bad;
  const std::string with_problem = invalid_input_message(
      [] { parsed({"--pass", "bwd", "--problem", problem_key(small(attention_pass::bwd))}); });
  EXPECT_TRUE(contains(with_problem, "--pass")) << with_problem;
  const std::string dump = invalid_input_message([] { parsed({"--pass", "bwd", "--dump", "/tmp/d"}); });
  EXPECT_TRUE(contains(dump, "--dump") && contains(dump, "fwdbwd")) << dump;
  EXPECT_NO_THROW(parsed({"--pass", "fwdbwd", "--dump", "/tmp/d"}));
}

TEST(pass_option, configs_must_be_of_the_runs_pass) {
  const std::string fwd_for_bwd =
      invalid_input_message([] { parsed({"--pass", "bwd", "--family", "fa2", "--configs", "m64_n64_w4_s2"}); });
  EXPECT_TRUE(contains(fwd_for_bwd, "m64_n64_w4_s2 is a forward config")) << fwd_for_bwd;
  const std::string bwd_for_fwd = invalid_input_message(
      [] { parsed({"--family", "fa2", "--configs", "kv_m32_n64_w4_s2-q_m64_n64_w4_s2"}); });
  EXPECT_TRUE(contains(bwd_for_fwd, "is a backward variant") && contains(bwd_for_fwd, "--pass bwd")) << bwd_for_fwd;
  const std::string garbled =
      invalid_input_message([] { parsed({"--pass", "bwd", "--family", "fa2", "--configs", "kv_m32"}); });
  EXPECT_TRUE(contains(garbled, "kv_m32")) << garbled;
  // fwdbwd takes both kinds, and each goes to its pass.
  const options both = parsed({"--pass", "fwdbwd", "--family", "wgmma", "--configs",
                               "m64_n64_w4_s2,wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2"});
  progress_line progress;
  const tune_options t = make_tune_options(both, progress);
  EXPECT_EQ(t.configs, (std::vector<tile_config>{{64, 64, 4, 2}}));
  ASSERT_EQ(t.backward_configs.size(), 1u);
  EXPECT_EQ(name(t.backward_configs[0]), "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2");
}

TEST(backward_tuning, compile_only_builds_the_backwards_variants_as_backward_records) {
  const compile_cache cache("");
  tune_options o;
  o.family = "fa2";
  o.backward_configs = {parse_backward_config("kv_m32_n64_w4_s2-q_m64_n64_w4_s2"),
                        parse_backward_config("kv_m32_n64_w4_s2_x2-q_m64_n64_w4_s3"),  // x2 at D 64 is fine
                        parse_backward_config("kv_m40_n64_w4_s2-q_m64_n64_w4_s2")};    // not whole mma tiles
  const problem s = small(attention_pass::bwd);
  const tune_result r = compile_only(s, "sm_80", cache, o);
  ASSERT_EQ(r.records.size(), 3u);
  for (const record& rec : r.records) {
    EXPECT_EQ(rec.shape, s);
    EXPECT_EQ(rec.family, "fa2");
    EXPECT_EQ(rec.kernel_hash.size(), 16u);
  }
  EXPECT_EQ(config_name(r.records[0]), "kv_m32_n64_w4_s2-q_m64_n64_w4_s2");
  EXPECT_EQ(r.records[0].status, status::compiled) << r.records[0].message;
  EXPECT_EQ(r.records[0].spill_bytes, 0);
  EXPECT_GT(r.records[0].registers, 0);
  EXPECT_EQ(r.records[1].status, status::compiled) << r.records[1].message;
  EXPECT_EQ(r.records[2].status, status::pruned);
  EXPECT_TRUE(contains(r.records[2].message, "16")) << r.records[2].message;
  EXPECT_EQ(r.compiled, 2);
}

// A sliding window: both families' backward variants take it (the atomic-dQ ones too).
TEST(backward_tuning, a_window_runs_on_both_families_backward) {
  problem s = small(attention_pass::bwd);
  s.window_left = 48, s.window_right = -1;  // causal: the right side is the diagonal
  EXPECT_FALSE(backward_refusal(s).has_value());
  const compile_cache cache("");
  tune_options o;
  o.family = "fa2";
  o.backward_configs = {parse_backward_config("kv_m32_n64_w4_s2-q_m64_n64_w4_s2")};
  const tune_result fa2 = compile_only(s, "sm_90a", cache, o);
  ASSERT_EQ(fa2.records.size(), 1u);
  EXPECT_EQ(fa2.records[0].status, status::compiled) << fa2.records[0].message;
  EXPECT_EQ(fa2.records[0].shape.window_left, 48);
  o.family = "wgmma";
  o.backward_configs = {parse_backward_config("wg_kv_m64_n64_w4_s2-q_m64_n64_w4_s2"),
                        parse_backward_config("wg_kv_m64_n64_w4_s2-dq_atomic")};
  const tune_result wg = compile_only(s, "sm_90a", cache, o);
  ASSERT_EQ(wg.records.size(), 2u);
  for (const record& r : wg.records) EXPECT_EQ(r.status, status::compiled) << config_name(r) << ": " << r.message;
}

// --deterministic leaves the atomic-dQ variants out of the defaults and refuses one given by name.
TEST(backward_tuning, deterministic_mode_has_no_atomic_dq_variant) {
  const problem s = small(attention_pass::bwd);
  tune_options o;
  o.family = "wgmma";
  const auto all = backward_configs_of(o, s);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const backward_config& c) { return c.atomic_dq; }))
      << "the defaults have atomic-dQ variants at D " << s.head_dim;
  o.deterministic = true;
  const auto kept = backward_configs_of(o, s);
  EXPECT_FALSE(kept.empty());
  for (const auto& c : kept) EXPECT_TRUE(deterministic(c)) << name(c);
  o.backward_configs = {parse_backward_config("wg_kv_m64_n64_w4_s2-dq_atomic")};
  const std::string why = invalid_input_message([&] { backward_configs_of(o, s); });
  EXPECT_TRUE(contains(why, "wg_kv_m64_n64_w4_s2-dq_atomic") && contains(why, "atomics")) << why;
}

TEST(backward_tuning, the_family_decides_the_default_variants_and_one_without_backward_kernels_is_refused) {
  const problem s = small(attention_pass::bwd);
  tune_options o;
  o.family = "wgmma";
  const auto wgmma = backward_configs_of(o, s);
  ASSERT_FALSE(wgmma.empty());
  for (const auto& c : wgmma) EXPECT_TRUE(c.wgmma) << name(c);
  o.family = "fa2";
  const auto fa2 = backward_configs_of(o, s);
  ASSERT_FALSE(fa2.empty());
  for (const auto& c : fa2) EXPECT_FALSE(c.wgmma) << name(c);
  EXPECT_EQ(fa2.size() + wgmma.size(), backward_default_configs(s).size());
  // Given variants go to their own family's run (a run of the default families runs each once).
  o.backward_configs = {parse_backward_config("wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2"),
                        parse_backward_config("kv_m32_n64_w4_s2-q_m64_n64_w4_s2")};
  o.family = "fa2";
  ASSERT_EQ(backward_configs_of(o, s).size(), 1u);
  EXPECT_FALSE(backward_configs_of(o, s)[0].wgmma);
  o.family = "wgmma";
  ASSERT_EQ(backward_configs_of(o, s).size(), 1u);
  EXPECT_TRUE(backward_configs_of(o, s)[0].wgmma);
  o.family = "fa2";
  o.backward_configs.erase(o.backward_configs.begin() + 1);  // wgmma's alone
  const std::string none = invalid_input_message([&] { compile_only(s, "sm_90a", compile_cache(""), o); });
  EXPECT_TRUE(contains(none, "no backward variant of family fa2")) << none;
  o.backward_configs.clear();
  // dO is standard normal whatever the inputs' kind.
  for (input_kind k : {input_kind::normal, input_kind::wide, input_kind::sink}) {
    const attn_k::input_fill f = input_fill_for(k, tensor_role::d_o, s);
    EXPECT_EQ(f.scale, 1.f);
    EXPECT_EQ(f.ramp, 0.f);
    EXPECT_EQ(f.offset, 0.f);
    EXPECT_EQ(f.sinks, 0);
  }
  const compile_cache cache("");
  o.family = "hopper";
  const std::string hopper = invalid_input_message([&] { compile_only(s, "sm_90a", cache, o); });
  EXPECT_TRUE(contains(hopper, "family hopper has no backward")) << hopper;
  o.family = "fa2";
  const std::string both = invalid_input_message([&] { compile_only(small(attention_pass::fwdbwd), "sm_80", cache, o); });
  EXPECT_TRUE(contains(both, "fwdbwd")) << both;
  problem lens = s;
  lens.kv_lens = "uniform:1:100";  // per-sequence K/V lengths: not in the backward yet
  const std::string why = invalid_input_message([&] { compile_only(lens, "sm_80", cache, o); });
  EXPECT_TRUE(contains(why, "kv_lens 'uniform:1:100'")) << why;
}

TEST(backward_tuning, a_run_of_the_default_families_searches_those_with_backward_kernels) {
  const options o = parsed({"--pass", "bwd", "--compile-only", "--arch", "sm_90a", "--shape", "1,4,200,64"});
  // The forward's default on sm_90a is hopper alone; the backward's are fa2 and wgmma.
  EXPECT_EQ(searched_families(family_run_of(o), 9, 0, o.problem), "fa2,wgmma");
  EXPECT_EQ(searched_families(family_run_of(o), 8, 0, o.problem), "fa2");
  const options f = parsed({"--compile-only", "--arch", "sm_90a", "--shape", "1,4,200,64"});
  EXPECT_EQ(searched_families(family_run_of(f), 9, 0, f.problem), "hopper");
  problem lens = o.problem;
  lens.kv_lens = "uniform:1:100";  // per-sequence K/V lengths: not in the backward yet
  const std::string text = searched_families(family_run_of(o), 9, 0, lens);
  EXPECT_TRUE(contains(text, "kv_lens")) << text;
  EXPECT_EQ(text.find("kv_lens"), text.rfind("kv_lens")) << text;  // said once
}

TEST(pass_option, deterministic_mode_reaches_the_tuner_and_the_child) {
  const options o = parsed({"--pass", "bwd", "--family", "fa2", "--deterministic"});
  EXPECT_TRUE(o.deterministic);
  progress_line progress;
  const tune_options t = make_tune_options(o, progress);
  EXPECT_TRUE(t.deterministic);
  const options child = parsed(
      child_arguments(family_run_of(o), t, "fa2", o.problem, {"kv_m32_n64_w4_s2-q_m64_n64_w4_s2"}, 7, 0, "/tmp/c.csv"));
  EXPECT_TRUE(child.deterministic);
  EXPECT_FALSE(parsed({"--pass", "bwd"}).deterministic);
}

TEST(backward_tuning, the_isolated_rerun_gets_the_backward_variants_by_name) {
  const options o = parsed({"--pass", "bwd", "--family", "wgmma", "--shape", "1,4,200,64"});
  progress_line progress;
  const std::vector<std::string> names = {"wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2", "wg_kv_m32_n64_w4_s2-q_m128_n64_w8_s2"};
  const options child = parsed(
      child_arguments(family_run_of(o), make_tune_options(o, progress), "wgmma", o.problem, names, 7, 0, "/tmp/c.csv"));
  EXPECT_EQ(child.problem.pass, attention_pass::bwd);
  EXPECT_EQ(child.configs, names);
  const tune_options t = make_tune_options(child, progress);
  ASSERT_EQ(t.backward_configs.size(), 2u);
  EXPECT_TRUE(t.configs.empty());
  EXPECT_EQ(backward_configs_of(t, child.problem), t.backward_configs);
}

TEST(backward_tuning, a_sweep_takes_each_rows_pass_or_the_one_given_and_splits_fwdbwd) {
  std::vector<sweep_row> rows(3);
  rows[0].name = "a", rows[0].problem = small(attention_pass::fwd);
  rows[1].name = "b", rows[1].problem = small(attention_pass::fwdbwd);
  rows[2].name = "c", rows[2].problem = small(attention_pass::bwd);
  const auto own = with_passes(rows, std::nullopt);
  ASSERT_EQ(own.size(), 4u);
  EXPECT_EQ(own[0].problem.pass, attention_pass::fwd);
  EXPECT_EQ(own[1].name, "b");
  EXPECT_EQ(own[1].problem.pass, attention_pass::fwd);
  EXPECT_EQ(own[2].name, "b bwd");
  EXPECT_EQ(own[2].problem.pass, attention_pass::bwd);
  EXPECT_EQ(own[3].problem.pass, attention_pass::bwd);
  const auto all_bwd = with_passes(rows, attention_pass::bwd);
  ASSERT_EQ(all_bwd.size(), 3u);
  for (const auto& r : all_bwd) EXPECT_EQ(r.problem.pass, attention_pass::bwd);
  EXPECT_EQ(with_passes(rows, attention_pass::fwdbwd).size(), 6u);
}

TEST(backward_tuning, attn_bench_takes_a_pass) {
  EXPECT_EQ(parse_bench_arguments({"r.csv"}).pass, attention_pass::fwd);
  EXPECT_EQ(parse_bench_arguments({"r.csv", "--pass", "bwd"}).pass, attention_pass::bwd);
  EXPECT_EQ(parse_bench_arguments({"--pass=fwdbwd", "r.csv"}).pass, attention_pass::fwdbwd);
  const std::string bad = invalid_input_message([] { parse_bench_arguments({"r.csv", "--pass", "up"}); });
  EXPECT_TRUE(contains(bad, "'up'")) << bad;
  EXPECT_TRUE(contains(bench_usage, "--pass")) << bench_usage;
}

TEST(backward_library, the_table_gives_a_tuned_shapes_backward_variant_else_the_fallback) {
  const problem tuned = small(attention_pass::bwd);
  record fwd = measured_record(small(attention_pass::fwd), tile_config{128, 64, 4, 2});
  record bwd = measured_record(tuned, parse_backward_config("wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2"));
  bwd.family = "wgmma";
  const tuned_table table = tuned_table::parse(csv_file_text({fwd, bwd}), "t.csv");
  device_desc h200 = fwd.device;
  const resource_limits limits = limits_for_arch("sm_90a");
  const tuned_choice exact = choose_config(table, h200, limits, tuned);
  EXPECT_EQ(exact.source, choice_source::tuned);
  EXPECT_EQ(exact.family, "wgmma");
  EXPECT_EQ(name(exact.backward), "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2");
  EXPECT_EQ(choose_config(table, h200, limits, small(attention_pass::fwd)).config, (tile_config{128, 64, 4, 2}));
  problem other = tuned;
  other.q_len = 4096;
  const tuned_choice fallback = choose_config(table, h200, limits, other);
  EXPECT_EQ(fallback.source, choice_source::fallback);
  EXPECT_EQ(name(fallback.backward), "kv_m32_n64_w4_s2-q_m64_n64_w4_s2");
  other.head_dim = 256;
  EXPECT_EQ(name(choose_config(table, h200, limits, other).backward), "kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1");
  // A fallback runs wherever the backward does (sm_80 to sm_90, 99 KiB of shared memory too), at
  // every head dim it takes, causal or not.
  const tuned_table none;
  for (const bool causal : {false, true})
    for (int64_t d = 8; d <= 256; d += 8) {
      other.head_dim = d, other.causal = causal;
      for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90a"}) {
        std::string why;
        try {
          EXPECT_EQ(choose_config(none, h200, limits_for_arch(arch), other).source, choice_source::fallback);
        } catch (const unsupported_problem& e) {
          why = e.what();
        }
        EXPECT_EQ(why, "") << d << " " << arch;
      }
    }
  // A tuned variant the device cannot run (wgmma off sm_90) falls through to the fallback.
  EXPECT_EQ(choose_config(table, h200, limits_for_arch("sm_80"), tuned).source, choice_source::fallback);
  problem lens = tuned;
  lens.kv_lens = "uniform:1:100";  // per-sequence K/V lengths: not in the backward yet
  try {
    choose_config(table, h200, limits, lens);
    ADD_FAILURE() << "a backward with per-sequence K/V lengths was chosen";
  } catch (const unsupported_problem& e) {
    EXPECT_TRUE(contains(e.what(), "kv_lens")) << e.what();
  }
}

TEST(backward_library, an_export_carries_the_backward_variant_and_its_bucket_runs_it) {
  record bwd = measured_record(small(attention_pass::bwd), parse_backward_config("kv_m64_n128_w8_s2-q_m128_n64_w8_s2"));
  record fwd = measured_record(small(attention_pass::fwd), tile_config{128, 64, 4, 2});
  const auto entries = export_entries(best_table({fwd, bwd}));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_FALSE(entries[0].backward.has_value());
  ASSERT_TRUE(entries[1].backward.has_value());
  EXPECT_EQ(variant_name(entries[1]), "kv_m64_n128_w8_s2-q_m128_n64_w8_s2");
  EXPECT_EQ(variant_name(entries[0]), "m128_n64_w4_s2");
  const std::string csv = export_csv(entries);
  EXPECT_TRUE(contains(csv, ",tuned_shapes,variant\n")) << csv;
  for (const auto& back : {read_export_csv(csv, "e.csv"), read_export_json(export_json(entries), "e.json")}) {
    ASSERT_EQ(back.size(), 2u);
    EXPECT_FALSE(back[0].backward.has_value());
    ASSERT_TRUE(back[1].backward.has_value());
    EXPECT_EQ(*back[1].backward, *entries[1].backward);
  }
  // A shape of the same bucket (other B and H) runs the entry's variant; the table from the export text.
  problem near = small(attention_pass::bwd);
  near.batch = 8, near.heads = 16, near.kv_heads = 8;
  const tuned_choice c = choose_config(tuned_table::parse(csv, "e.csv"), bwd.device, limits_for_arch("sm_90a"), near);
  EXPECT_EQ(c.source, choice_source::bucket);
  EXPECT_EQ(name(c.backward), "kv_m64_n128_w8_s2-q_m128_n64_w8_s2");
  // An export from before the column: its backward entry has no variant, and the fallback runs.
  std::string old = csv;
  old.replace(old.find(",variant\n"), 9, "\n");
  for (size_t at; (at = old.find(",kv_m64_n128_w8_s2-q_m128_n64_w8_s2")) != std::string::npos;) old.erase(at, 35);
  for (size_t at; (at = old.find(",m128_n64_w4_s2\n")) != std::string::npos;) old.replace(at, 16, "\n");
  const auto before = read_export_csv(old, "old.csv");
  ASSERT_EQ(before.size(), 2u) << old;
  EXPECT_FALSE(before[1].backward.has_value()) << old;
  EXPECT_EQ(choose_config(tuned_table::parse(old, "old.csv"), bwd.device, limits_for_arch("sm_90a"), near).source,
            choice_source::fallback);
  // A variant that disagrees with the entry's block columns is refused, naming it.
  std::string edited = csv;
  edited.replace(edited.find("kv_m64_n128_w8_s2-q"), 19, "kv_m32_n128_w8_s2-q");
  const std::string why = invalid_input_message([&] { read_export_csv(edited, "x.csv"); });
  EXPECT_TRUE(contains(why, "kv_m32_n128_w8_s2-q_m128_n64_w8_s2")) << why;
}

// A bundle holds forward kernels only so far: a table's backward rows are skipped, saying so, and
// add no forward kernel (nor a forward fallback for their kind).
TEST(backward_library, a_bundle_skips_backward_variants_saying_so) {
  record fwd = measured_record(small(attention_pass::fwd), tile_config{128, 64, 4, 2});
  record bwd = measured_record(small(attention_pass::bwd), parse_backward_config("kv_m64_n128_w8_s2-q_m128_n64_w8_s2"));
  const tuned_table table = tuned_table::parse(csv_file_text({fwd, bwd}), "t.csv");
  std::vector<std::string> skipped;
  const auto targets = bundle_targets(table, "sm_90a", skipped);
  for (const auto& t : targets) EXPECT_EQ(t.shape.pass, attention_pass::fwd) << t.key;
  EXPECT_EQ(targets.size(), 1u);  // the tuned forward, which is also its kind's fallback (m128_n64_w4_s2)
  ASSERT_FALSE(skipped.empty());
  EXPECT_TRUE(contains(skipped.front(), "kv_m64_n128_w8_s2-q_m128_n64_w8_s2") &&
              contains(skipped.front(), "not bundled yet"))
      << skipped.front();
}

// The fallbacks compile, without spills, where they are chosen.
TEST(backward_library, the_fallbacks_compile_without_spills) {
  const compile_cache cache("");
  for (const int64_t d : {64, 128, 256}) {
    problem s = small(attention_pass::bwd);
    s.head_dim = d;
    tune_options o;
    o.family = "fa2";
    o.backward_configs = fallback_backwards(d);
    for (const char* arch : {"sm_80", "sm_90a"})
      for (const record& r : compile_only(s, arch, cache, o).records) {
        EXPECT_EQ(r.status, status::compiled) << config_name(r) << " D" << d << " " << arch << ": " << r.message;
        EXPECT_EQ(r.spill_bytes, 0) << config_name(r) << " D" << d << " " << arch;
      }
  }
}

}  // namespace
}  // namespace attn
