// The problem's field list (core/problem.hpp) drives every serializer: for each field in turn, a
// problem that differs from a base problem in that field alone must come back whole from the key,
// the results CSV, the JSON, the best table, the database, the sweep file and the child process's
// arguments, and must differ from the base in each (a field a serializer forgot would come back as
// the base's value, or as the default).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command_support.hpp"
#include "core/problem.hpp"
#include "db/sqlite.hpp"
#include "db/tuned_db.hpp"
#include "parsed_options.hpp"
#include "report/bench_name.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "measured_record.hpp"
#include "report/json_report.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_dir.hpp"
#include "varied_problem.hpp"

namespace attn {
namespace {

problem base_problem() {
  problem p;
  p.batch = 2, p.heads = 8, p.kv_heads = 4, p.q_len = 96, p.kv_len = 160, p.head_dim = 64;
  return p;
}

record record_of(const problem& p) { return measured_record(p); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of column `name` in the first data row of a CSV without quoted commas.
std::string csv_value(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  auto split = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) out.push_back(cell);
    return out;
  };
  const auto names = split(header), cells = split(row);
  for (size_t i = 0; i < names.size() && i < cells.size(); ++i)
    if (names[i] == name) return cells[i];
  return "(no column " + name + ")";
}

class problem_fields_test : public ::testing::TestWithParam<size_t> {
 protected:
  const problem_field& field() const { return problem_fields()[GetParam()]; }
  problem base = base_problem();
  problem other = varied(field(), base_problem());
};

TEST_P(problem_fields_test, the_varied_problem_differs_in_this_field_alone) {
  ASSERT_NE(field().get(other), field().get(base)) << "no other value found for " << field().name;
  for (const auto& f : problem_fields())
    if (&f != &field() && f.follows != static_cast<int>(GetParam()) && !varied_together(field(), f))
      EXPECT_EQ(f.get(other), f.get(base)) << f.name;
  EXPECT_FALSE(other == base);
  EXPECT_NE(hash_value(other), hash_value(base));
  EXPECT_NE(describe(other), describe(base));
  EXPECT_NE(benchmark_name(record_of(other)), benchmark_name(record_of(base)));
}

TEST_P(problem_fields_test, the_key_round_trips) {
  EXPECT_EQ(parse_problem_key(problem_key(other)), other);
  EXPECT_NE(problem_key(other), problem_key(base));
}

TEST_P(problem_fields_test, the_results_csv_round_trips) {
  const auto rows = read_csv_text(csv_text({record_of(other)}), "memory");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shape, other);
  EXPECT_EQ(csv_value(csv_text({record_of(other)}), field().name), field().get(other));
}

TEST_P(problem_fields_test, the_json_carries_it) {
  const auto doc = nlohmann::json::parse(results_json({}, {record_of(other)}));
  const auto& value = doc.at("variants").at(0).at("shape").at(field().name);
  const std::string text = value.is_boolean() ? (value.get<bool>() ? "1" : "0")
                           : value.is_string() ? value.get<std::string>()
                                               : std::to_string(value.get<int64_t>());
  EXPECT_EQ(text, field().get(other));
}

TEST_P(problem_fields_test, the_best_table_carries_it) {
  temp_dir dir;
  write_best_csv(dir / "x.best.csv", best_table({record_of(other)}));
  EXPECT_EQ(csv_value(read_file(dir / "x.best.csv"), field().name), field().get(other));
}

TEST_P(problem_fields_test, the_database_keys_on_it) {
  temp_dir dir;
  tuned_db db = tuned_db::open(dir / "tuned.sqlite");
  tuning_key k{"NVIDIA H200", "9.0", 132, "13.0", "13.0", "fa2=0", other, "screen"};
  db.put(k, {record_of(other)}, "2026-12-01 00:00:00");
  const auto hit = db.find(k);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->key.shape, other);
  EXPECT_EQ(hit->records.at(0).shape, other);
  k.shape = base;
  EXPECT_FALSE(db.find(k).has_value());
}

TEST_P(problem_fields_test, the_sweep_file_reads_it) {
  temp_dir dir;
  std::string header = "name", row = "r";
  for (const auto& f : problem_fields()) header += std::string(",") + f.sweep_column, row += "," + f.get(other);
  std::ofstream(dir / "s.csv") << header << "\n" << row << "\n";
  const auto rows = read_sweep_file(dir / "s.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem, other);
}

TEST_P(problem_fields_test, the_child_process_gets_it) {
  options o = testing::parsed({"--shape", "1,1,64,64"});
  o.problem = other;
  progress_line progress;
  const options child =
      testing::parsed(child_arguments(family_run_of(o), make_tune_options(o, progress), "fa2", other,
                                      {other.pass == attention_pass::bwd ? "kv_m32_n64_w4_s2-q_m64_n64_w4_s2" : "m64_n64_w4_s2"},
                                      1, 0, "/tmp/child.csv"));
  EXPECT_EQ(child.problem, other);
}

INSTANTIATE_TEST_SUITE_P(every_field, problem_fields_test, ::testing::Range<size_t>(0, problem_field_count),
                         [](const auto& info) { return std::string(problem_fields()[info.param].name); });

// A database made before a field joined the list (here: one without the layout column) is rebuilt
// when a writer opens it, its rows taking the field's default; a reader refuses it until then.
TEST(problem_fields_database, a_field_the_table_lacks_is_added_by_a_writer_and_refused_by_a_reader) {
  temp_dir dir;
  const std::string path = dir / "old.sqlite";
  const problem p = base_problem();
  {
    std::string schema = db_schema_v1_sql();
    for (const std::string piece : {" layout TEXT NOT NULL,", " layout,"}) {
      const size_t at = schema.find(piece);
      ASSERT_NE(at, std::string::npos) << piece;
      schema.erase(at, piece.size());
    }
    sqlite_connection c(path, true);
    c.exec(schema);
    auto insert = c.prepare(
        "INSERT INTO tunings (device, cc, sm_count, cuda_version, nvrtc_version, kernel_hashes, batch, heads, "
        "kv_heads, q_len, kv_len, head_dim, dtype, causal, space, best_family, best_config, tflops, median_ms, "
        "noise, max_error, runner_up, tuned_at, version, records_csv) VALUES ('NVIDIA H200', '9.0', 132, '13.0', "
        "'13.0', 'fa2=0', 2, 8, 4, 96, 160, 64, 'bf16', 0, 'screen', 'fa2', 'm64_n64_w4_s2', 1, 0.5, 0, 0, '', "
        "'2026-12-01 00:00:00', '0.1', ?1)");
    insert.bind(1, csv_text({record_of(p)}));
    insert.step();
    // The current schema, less the column.
    for (int version = 1; version < db_schema_version; ++version) c.exec(db_migration_sql(version));
  }
  try {
    tuned_db::open_read_only(path);
    ADD_FAILURE() << "a database without the layout column was read";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("'layout'"), std::string::npos) << e.what();
  }
  tuned_db db = tuned_db::open(path);
  const tuning_key k{"NVIDIA H200", "9.0", 132, "13.0", "13.0", "fa2=0", p, "screen"};
  const auto hit = db.find(k);  // the row, with layout bhsd (the default)
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->best_config, "m64_n64_w4_s2");
  tuning_key other = k;
  other.shape.layout = layout::bshd;
  EXPECT_FALSE(db.find(other).has_value());
  db.put(other, {record_of(other.shape)}, "2026-12-01 00:00:01");  // the new key is unique with the field
  EXPECT_EQ(db.list().size(), 2u);
  EXPECT_NO_THROW(tuned_db::open_read_only(path));
}

TEST(problem_key, refuses_a_bad_missing_or_repeated_field_naming_it) {
  const std::string good = problem_key(base_problem());
  for (const auto& [key, part] : std::vector<std::pair<std::string, std::string>>{
           {good + ",batch=3", "batch=3"},
           {"batch=2", "no heads"},
           {good.substr(0, good.find(',')) + "x" + good.substr(good.find(',')), "batch"},
           {good + ",window=4", "window=4"}}) {
    try {
      parse_problem_key(key);
      ADD_FAILURE() << key << " was accepted";
    } catch (const invalid_input& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
}

TEST(problem_key, a_problem_the_kernels_cannot_take_is_refused) {
  problem p = base_problem();
  p.head_dim = 300;  // past 256 (59 is not: fa2 takes it)
  EXPECT_THROW(parse_problem_key(problem_key(p)), invalid_input);
  p.head_dim = 59;
  EXPECT_EQ(parse_problem_key(problem_key(p)), p);
}

}  // namespace
}  // namespace attn
