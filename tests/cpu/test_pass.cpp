// The problem field `pass` (issue 22, item 2; schema 10): which attention pass is tuned, fwd (the
// default, every file and key from before it), bwd or fwdbwd. Its text, its FLOP and byte counts,
// files and keys written before it reading as fwd, the export's key, and backward_refusal's
// messages. test_problem_fields.cpp walks it through every round trip with the other fields.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "core/problem.hpp"
#include "db/sqlite.hpp"
#include "db/tuned_db.hpp"
#include "invalid_input_message.hpp"
#include "measured_record.hpp"
#include "report/bench_name.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "report/csv_trailer.hpp"
#include "report/export.hpp"
#include "report/json_report.hpp"
#include "run/tuner.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

problem shape(attention_pass pass = attention_pass::fwd) {
  problem p;
  p.batch = 4, p.heads = 32, p.kv_heads = 8, p.q_len = 2048, p.kv_len = 2048, p.head_dim = 128;
  p.pass = pass;
  return p;
}

// A forward config's name, or a backward variant's for a pass bwd problem.
record record_of(const problem& p, const char* config = nullptr) {
  if (p.pass == attention_pass::bwd)
    return measured_record(p, parse_backward_config(config ? config : "kv_m64_n128_w8_s2-q_m64_n64_w4_s2"));
  return measured_record(p, parse_config_name(config ? config : "m128_n64_w4_s2"));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const invalid_input& e) {
    return e.what();
  }
  ADD_FAILURE() << "did not throw invalid_input";
  return {};
}

// text with its last CSV column dropped from every line and its rows' schema_version set to 9: a
// results CSV as schema 9 wrote it (pass is the last column; no cell before it holds a quoted comma).
std::string as_schema_9(const std::string& text) {
  std::string out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = text.substr(start, end - start);
    line.erase(line.rfind(','));
    if (start > 0) line = "9" + line.substr(line.find(','));
    out += line + '\n';
  }
  return out;
}

TEST(pass, text_round_trips) {
  for (attention_pass p : {attention_pass::fwd, attention_pass::bwd, attention_pass::fwdbwd})
    EXPECT_EQ(parse_pass(to_string(p)), p);
  EXPECT_EQ(to_string(attention_pass::fwd), "fwd");
  EXPECT_EQ(to_string(attention_pass::bwd), "bwd");
  EXPECT_EQ(to_string(attention_pass::fwdbwd), "fwdbwd");
  EXPECT_EQ(problem{}.pass, attention_pass::fwd);
}

TEST(pass, a_bad_pass_is_refused_naming_it_and_the_choices) {
  for (const char* bad : {"backward", "", "FWD", "fwd,bwd", "bwd "}) {
    const std::string msg = message_of([&] { parse_pass(bad); });
    EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fwd, bwd or fwdbwd"), std::string::npos) << msg;
  }
  const problem_field& f = problem_fields().back();
  ASSERT_STREQ(f.name, "pass");
  problem p;
  EXPECT_NE(message_of([&] { f.set(p, "dq"); }).find("'dq'"), std::string::npos);
}

TEST(pass, its_field_entry) {
  const problem_field& f = problem_fields().back();
  EXPECT_STREQ(f.name, "pass");
  EXPECT_STREQ(f.sweep_column, "pass");
  EXPECT_EQ(f.type, field_type::text);
  EXPECT_EQ(f.export_key, static_cast<int>(export_key_field_count));  // after the other key fields
  EXPECT_EQ(export_key_fields().back(), &f);
  EXPECT_FALSE(f.required);
  EXPECT_EQ(f.since_schema, pass_schema);
  EXPECT_EQ(pass_schema, 10);
  EXPECT_EQ(csv_schema_version, pass_schema);
  EXPECT_EQ(f.get(problem{}), "fwd");
}

TEST(pass, the_forward_keeps_every_name_and_the_backward_says_its_pass) {
  problem p = shape();
  p.causal = true;
  EXPECT_EQ(describe(p), "B4 H32/8 N2048 D128 bf16 bhsd causal");
  EXPECT_EQ(benchmark_name(record_of(p)), "fa2.B4_H32-8_N2048_D128_bf16_bhsd_causal.m128_n64_w4_s2");
  p.pass = attention_pass::bwd;
  EXPECT_EQ(describe(p), "B4 H32/8 N2048 D128 bf16 bhsd causal bwd");
  EXPECT_EQ(benchmark_name(record_of(p)), "fa2.B4_H32-8_N2048_D128_bf16_bhsd_causal_bwd.kv_m64_n128_w8_s2-q_m64_n64_w4_s2");
  p.pass = attention_pass::fwdbwd;
  EXPECT_EQ(describe(p), "B4 H32/8 N2048 D128 bf16 bhsd causal fwdbwd");
  // The default results file: the forward's as before, a backward's beside it.
  EXPECT_EQ(default_out_path("NVIDIA H200", shape()), "results/nvidia-h200-4x32x2048x2048x128-bf16-bhsd.csv");
  EXPECT_EQ(default_out_path("NVIDIA H200", shape(attention_pass::bwd)),
            "results/nvidia-h200-4x32x2048x2048x128-bf16-bhsd-bwd.csv");
}

TEST(pass, the_backward_counts_2_5_times_the_forwards_flops) {
  for (bool causal : {false, true}) {
    problem p = shape();
    p.causal = causal;
    const double forward = attention_flops(p);
    EXPECT_DOUBLE_EQ(forward, 4.0 * 4 * 32 * 2048 * 2048 * 128 / (causal ? 2 : 1));
    p.pass = attention_pass::bwd;
    EXPECT_DOUBLE_EQ(attention_flops(p), 2.5 * forward) << causal;
    p.pass = attention_pass::fwdbwd;
    EXPECT_DOUBLE_EQ(attention_flops(p), 3.5 * forward) << causal;
    EXPECT_DOUBLE_EQ(tflops(p, 2.0), 3.5 * forward / 2e9);
  }
  // The forward's other rules apply first: a window's visible pairs, dv.
  problem w = shape();
  w.causal = true, w.window_left = 255, w.head_dim_v = 64;
  const double forward = attention_flops(w);
  EXPECT_DOUBLE_EQ(forward, 2.0 * (128 + 64) * 32 * 4 * visible_pairs(w, 2048));
  w.pass = attention_pass::bwd;
  EXPECT_DOUBLE_EQ(attention_flops(w), 2.5 * forward);
}

TEST(pass, the_backward_moves_its_tensors_the_lse_and_delta) {
  const problem f = shape(), b = shape(attention_pass::bwd), both = shape(attention_pass::fwdbwd);
  const int64_t q = 4LL * 2048 * 32 * 128 * 2, kv = 4LL * 2048 * 8 * 128 * 2, lse = 4LL * 2048 * 32 * 4;
  EXPECT_EQ(moved_bytes(f), 2 * q + 2 * kv + lse);  // Q read, O written, K and V read, the LSE written
  // Q, O, dO, K, V read, dQ, dK, dV written, the LSE read, delta written and read.
  EXPECT_EQ(moved_bytes(b), 4 * q + 4 * kv + 3 * lse);
  EXPECT_EQ(moved_bytes(both), moved_bytes(f) + moved_bytes(b));
  // With a window the keys no query sees are not read, but their (zero) gradients are written.
  problem w = shape(attention_pass::bwd);
  w.q_len = 16, w.kv_len = 4096, w.window_left = 100, w.causal = true;
  const int64_t wq = 4LL * 16 * 32 * 128 * 2, seen = 4LL * (100 + 16) * 8 * 128 * 2, all = 4LL * 4096 * 8 * 128 * 2,
                wlse = 4LL * 16 * 32 * 4;
  EXPECT_EQ(moved_bytes(w), 4 * wq + 2 * seen + 2 * all + 3 * wlse);
}

TEST(pass, validate_takes_every_pass) {
  for (attention_pass pass : {attention_pass::fwd, attention_pass::bwd, attention_pass::fwdbwd}) {
    problem p = shape(pass);
    p.head_dim_v = 32, p.head_dim = 59, p.window_left = 64;  // what the backward does not take yet
    EXPECT_NO_THROW(validate(p));
  }
}

TEST(pass, a_key_without_it_reads_as_fwd) {
  const problem b = shape(attention_pass::bwd);
  const std::string key = problem_key(b);
  EXPECT_NE(key.find(",pass=bwd"), std::string::npos) << key;
  EXPECT_EQ(parse_problem_key(key), b);
  const std::string before = key.substr(0, key.find(",pass="));  // a key written before the field
  EXPECT_EQ(parse_problem_key(before), shape());
  EXPECT_NE(message_of([&] { parse_problem_key(before + ",pass=both"); }).find("'both'"), std::string::npos);
  // The fields before it are still needed.
  const std::string no_seqlens = before.substr(0, before.find(",seqlens="));
  EXPECT_NE(message_of([&] { parse_problem_key(no_seqlens); }).find("no seqlens"), std::string::npos);
}

TEST(pass, a_schema_9_file_reads_as_fwd) {
  // The committed CI baseline, written by schema 9.
  const auto smoke = read_csv(std::string(ATTN_TUNE_SOURCE_DIR) + "/results/h200/ci-smoke.csv");
  ASSERT_FALSE(smoke.empty());
  for (const record& r : smoke) EXPECT_EQ(r.shape.pass, attention_pass::fwd) << describe(r.shape);
  // One made here: a forward record less the column.
  temp_dir dir;
  const std::string body = as_schema_9(csv_text({record_of(shape())}));
  ASSERT_EQ(body.find(",pass"), std::string::npos) << body;
  std::ofstream(dir / "v9.csv") << body << csv_trailer(body, 1);
  const auto back = read_csv(dir / "v9.csv");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].shape, shape());
}

TEST(pass, a_schema_10_row_carries_it_and_needs_it) {
  temp_dir dir;
  const std::vector<record> rows{record_of(shape(attention_pass::bwd)), record_of(shape(attention_pass::fwdbwd)),
                                 record_of(shape())};
  write_csv(dir / "r.csv", rows);
  const std::string text = slurp(dir / "r.csv");
  EXPECT_EQ(text.substr(0, text.find('\n')).substr(text.find('\n') - 5), ",pass");
  const auto back = read_csv(dir / "r.csv");
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back[i].shape, rows[i].shape);
  // A schema 10 row must give its pass: a blank one is refused, naming the column.
  std::string body = csv_text({record_of(shape())});
  ASSERT_EQ(body.substr(body.size() - 5), ",fwd\n");
  body.erase(body.size() - 4, 3);
  std::ofstream(dir / "blank.csv") << body << csv_trailer(body, 1);
  const std::string msg = message_of([&] { read_csv(dir / "blank.csv"); });
  EXPECT_NE(msg.find("column 'pass'"), std::string::npos) << msg;
}

TEST(pass, a_backward_records_variant_round_trips_and_a_forward_name_there_is_refused) {
  temp_dir dir;
  const problem b = shape(attention_pass::bwd);
  const std::vector<record> rows{record_of(b, "wg_kv_m64_n128_w8_s2_x2-q_m128_n64_w8_s1"), record_of(b)};
  EXPECT_EQ(config_name(rows[0]), "wg_kv_m64_n128_w8_s2_x2-q_m128_n64_w8_s1");
  EXPECT_EQ(rows[0].config, (tile_config{64, 128, 8, 2}));  // the dK/dV kernel's tile: the table's columns
  EXPECT_EQ(config_name(record_of(shape())), "m128_n64_w4_s2");
  write_csv(dir / "b.csv", rows);
  const std::string text = slurp(dir / "b.csv");
  EXPECT_NE(text.find(",wg_kv_m64_n128_w8_s2_x2-q_m128_n64_w8_s1,64,128,8,2,"), std::string::npos) << text;
  const auto back = read_csv(dir / "b.csv");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].backward, rows[i].backward);
    EXPECT_EQ(back[i].config, rows[i].config);
  }
  const auto doc = nlohmann::json::parse(results_json({}, rows));
  EXPECT_EQ(doc.at("variants").at(0).at("config"), "wg_kv_m64_n128_w8_s2_x2-q_m128_n64_w8_s1");
  // A pass bwd row whose name is a forward config's, or whose name and columns disagree: refused.
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string body = csv_text({rows[0]});
    const size_t at = body.find(from);
    EXPECT_NE(at, std::string::npos) << body;
    body.replace(at, from.size(), to);
    std::ofstream(dir / "bad.csv") << body << csv_trailer(body, 1);
    return message_of([&] { read_csv(dir / "bad.csv"); });
  };
  const std::string forward_name = refused(",wg_kv_m64_n128_w8_s2_x2-q_m128_n64_w8_s1,", ",m64_n128_w8_s2,");
  EXPECT_NE(forward_name.find("pass bwd"), std::string::npos) << forward_name;
  EXPECT_NE(forward_name.find("'m64_n128_w8_s2'"), std::string::npos) << forward_name;
  const std::string columns = refused(",64,128,8,2,", ",64,64,8,2,");
  EXPECT_NE(columns.find("disagrees"), std::string::npos) << columns;
}

TEST(pass, the_json_and_the_best_table_carry_it) {
  const auto doc = nlohmann::json::parse(results_json({}, {record_of(shape(attention_pass::bwd))}));
  EXPECT_EQ(doc.at("variants").at(0).at("shape").at("pass"), "bwd");
  // The same shape's passes are two shapes to the best table.
  const auto best = best_table({record_of(shape()), record_of(shape(attention_pass::bwd), "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2")});
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[1].best.shape.pass, attention_pass::bwd);
}

TEST(pass, a_sweep_file_reads_it_blank_or_missing_as_fwd) {
  temp_dir dir;
  const std::string columns = "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout";  // every file's
  std::ofstream(dir / "with.csv") << columns << ",pass\n"
                                  << "a,2,8,,1024,,64,,,,bwd\n"
                                  << "b,2,8,,1024,,64,,,,\n"
                                  << "c,2,8,,1024,,64,,,,fwdbwd\n"
                                  << ",2,8,,1024,,64,,,,fwd\n";
  const auto rows = read_sweep_file(dir / "with.csv");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].problem.pass, attention_pass::bwd);
  EXPECT_EQ(rows[1].problem.pass, attention_pass::fwd);
  EXPECT_EQ(rows[2].problem.pass, attention_pass::fwdbwd);
  EXPECT_EQ(rows[3].name, "B2 H8 N1024 D64 bf16 bhsd");  // a forward's name as before
  std::ofstream(dir / "without.csv") << columns << "\nx,2,8,,1024,,64,,,\n";
  const auto old = read_sweep_file(dir / "without.csv");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].problem.pass, attention_pass::fwd);
  EXPECT_EQ(old[0].problem, rows[1].problem);
  std::ofstream(dir / "bad.csv") << columns << ",pass\nx,2,8,,1024,,64,,,,back\n";
  const std::string msg = message_of([&] { read_sweep_file(dir / "bad.csv"); });
  EXPECT_NE(msg.find("bad.csv:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'back'"), std::string::npos) << msg;
}

TEST(pass, the_export_keys_on_it) {
  const problem f = shape(), b = shape(attention_pass::bwd);
  const auto entries = export_entries(best_table({record_of(f), record_of(b, "kv_m64_n128_w8_s2-q_m64_n64_w4_s2")}));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key.pass, attention_pass::fwd);
  EXPECT_EQ(entries[1].key.pass, attention_pass::bwd);
  EXPECT_TRUE(export_key_matches(entries[0], f) && !export_key_matches(entries[0], b));
  EXPECT_TRUE(export_key_matches(entries[1], b) && !export_key_matches(entries[1], f));
  for (const auto& back : {read_export_csv(export_csv(entries), "e.csv"), read_export_json(export_json(entries), "e.json")}) {
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0].key.pass, attention_pass::fwd);
    EXPECT_EQ(back[1].key.pass, attention_pass::bwd);
    EXPECT_EQ(back[1].config, parse_config_name("m64_n128_w8_s2"));
  }
  // An export from before the field (its CSV without the column) reads as fwd.
  std::string csv = export_csv({entries[0]});
  for (const char* cut : {"head_dim_v,pass,", ",0,fwd,"}) {
    const size_t at = csv.find(cut);
    ASSERT_NE(at, std::string::npos) << cut << "\n" << csv;
    csv.replace(at, std::string(cut).size(), std::string(cut) == ",0,fwd," ? ",0," : "head_dim_v,");
  }
  const auto old = read_export_csv(csv, "old.csv");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].key.pass, attention_pass::fwd);
  EXPECT_TRUE(export_key_matches(old[0], f));
  // The header: the pass after dv in lookup(), its rows' values quoted, the older lookup passing "fwd".
  const std::string header = export_header(entries, "x.csv");
  EXPECT_NE(header.find("int head_dim_v, const char* pass, long long seq_len"), std::string::npos) << header;
  EXPECT_NE(header.find("0, \"bwd\", "), std::string::npos) << header;
  EXPECT_NE(header.find("head_dim_v, \"fwd\", seq_len, kv_len, fell_back"), std::string::npos) << header;
}

// A database from before the field (schema 9: no pass column) opens for a writer, which adds the
// column; its rows read as fwd, and a backward of the same shape is another entry.
TEST(pass, a_database_without_the_column_reads_as_fwd) {
  temp_dir dir;
  const std::string path = dir / "old.sqlite";
  const tuning_key fwd_key{"NVIDIA H200", "9.0", 132, "13.0", "13.0", "fa2=0", shape(), "screen"};
  {
    sqlite_connection c(path, true);
    c.exec(db_schema_v1_sql());
    for (int version = 1; version < db_schema_version; ++version) c.exec(db_migration_sql(version));
    // The fields schema 9 had beyond the first ones, as its writers added them.
    const problem none;
    for (const problem_field& f : problem_fields()) {
      if (in_first_schema(f) || f.since_schema >= pass_schema) continue;
      const bool text = f.type == field_type::text || f.type == field_type::real;
      c.exec(fmt::format("ALTER TABLE tunings ADD COLUMN {} {} NOT NULL DEFAULT {}", f.name, text ? "TEXT" : "INTEGER",
                         text ? "'" + f.get(none) + "'" : f.get(none)));
    }
    auto insert = c.prepare(
        "INSERT INTO tunings (device, cc, sm_count, cuda_version, nvrtc_version, kernel_hashes, batch, heads, "
        "kv_heads, q_len, kv_len, head_dim, dtype, layout, causal, space, best_family, best_config, tflops, "
        "median_ms, noise, max_error, runner_up, tuned_at, version, records_csv) VALUES ('NVIDIA H200', '9.0', 132, "
        "'13.0', '13.0', 'fa2=0', 4, 32, 8, 2048, 2048, 128, 'bf16', 'bhsd', 0, 'screen', 'fa2', 'm128_n64_w4_s2', "
        "1, 0.5, 0, 0, '', '2026-12-04 00:00:00', '0.1', ?1)");
    insert.bind(1, as_schema_9(csv_text({record_of(shape())})));
    insert.step();
  }
  const std::string refused = message_of([&] { tuned_db::open_read_only(path); });  // until a writer adds it
  EXPECT_NE(refused.find("'pass'"), std::string::npos) << refused;
  tuned_db db = tuned_db::open(path);
  const auto hit = db.find(fwd_key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->key.shape.pass, attention_pass::fwd);
  EXPECT_EQ(hit->records.at(0).shape, shape());
  tuning_key bwd_key = fwd_key;
  bwd_key.shape.pass = attention_pass::bwd;
  EXPECT_FALSE(db.find(bwd_key).has_value());
  db.put(bwd_key, {record_of(bwd_key.shape, "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2")}, "2026-12-04 00:00:01");
  EXPECT_EQ(db.list().size(), 2u);
  const auto bwd_hit = db.find(bwd_key);
  ASSERT_TRUE(bwd_hit.has_value());
  EXPECT_EQ(bwd_hit->best_config, "wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2");  // the backward variant's name
  EXPECT_EQ(bwd_hit->records.at(0).backward, parse_backward_config("wg_kv_m64_n128_w8_s2-q_m64_n64_w4_s2"));
  EXPECT_EQ(bwd_hit->records.at(0).shape.pass, attention_pass::bwd);
  EXPECT_EQ(db.find(fwd_key)->best_config, "m128_n64_w4_s2");
  EXPECT_NO_THROW(tuned_db::open_read_only(path));
}

TEST(backward_refusal, a_forward_and_a_backward_it_takes_have_none) {
  problem p = shape();
  p.softcap = 50, p.window_left = 128, p.causal = true;
  EXPECT_FALSE(backward_refusal(p).has_value());  // the forward takes them
  for (attention_pass pass : {attention_pass::bwd, attention_pass::fwdbwd}) {
    problem q = shape(pass);
    EXPECT_FALSE(backward_refusal(q).has_value());
    q.causal = true, q.head_dim = 72, q.kv_len = 4096, q.layout = layout::bshd, q.dtype = dtype::fp16;
    EXPECT_FALSE(backward_refusal(q).has_value()) << *backward_refusal(q);
    q.window_left = 256;  // a sliding window too (fa2's backward; wgmma's refuses it itself)
    EXPECT_FALSE(backward_refusal(q).has_value()) << *backward_refusal(q);
  }
}

TEST(backward_refusal, names_what_the_backward_does_not_take_yet) {
  struct probe {
    const char* what;
    std::function<void(problem&)> change;
    std::vector<std::string> named;
  };
  const std::vector<probe> probes = {
      {"dv", [](problem& p) { p.head_dim_v = 60; }, {"dv 60", "multiple of 8"}},
      {"kv_lens", [](problem& p) { p.kv_lens = "uniform:1:2048"; }, {"kv_lens 'uniform:1:2048'"}},
      {"paged", [](problem& p) { p.page_size = 64; }, {"paged", "page_size 64"}},
      {"head dim", [](problem& p) { p.head_dim = 59; }, {"head dim 59", "multiple of 8"}},
  };
  for (const probe& c : probes) {
    for (attention_pass pass : {attention_pass::bwd, attention_pass::fwdbwd}) {
      problem p = shape(pass);
      c.change(p);
      ASSERT_NO_THROW(validate(p)) << c.what;
      const auto why = backward_refusal(p);
      ASSERT_TRUE(why.has_value()) << c.what;
      EXPECT_NE(why->find("pass " + to_string(pass)), std::string::npos) << *why;
      for (const std::string& part : c.named) EXPECT_NE(why->find(part), std::string::npos) << c.what << ": " << *why;
      p.pass = attention_pass::fwd;
      EXPECT_FALSE(backward_refusal(p).has_value()) << c.what;
    }
  }
  // Several at once: each named.
  problem p = shape(attention_pass::bwd);
  p.kv_lens = "uniform:1:2048", p.page_size = 16;
  const std::string why = backward_refusal(p).value();
  EXPECT_NE(why.find("kv_lens"), std::string::npos) << why;
  EXPECT_NE(why.find("page_size 16"), std::string::npos) << why;
  // What it takes: a window, softcap, V's own head dim and a packed batch.
  p = shape(attention_pass::bwd);
  p.softcap = 30.5, p.window_left = 100, p.head_dim = 192, p.head_dim_v = 128, p.seqlens = "100/2048/7/512";
  EXPECT_FALSE(backward_refusal(p).has_value()) << backward_refusal(p).value_or("");
}

}  // namespace
}  // namespace attn
