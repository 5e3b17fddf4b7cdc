// export and check reading a database (or a results CSV): one device's results, chosen with
// --device-name when there are several, and of each shape only its newest tuning, said in a note.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "cli/db_support.hpp"
#include "db/entry_choice.hpp"
#include "db/tuning_key.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

using testing::invalid_input_message;
using testing::parsed;

const device_desc h200{"NVIDIA H200", "sm_90a", 9, 0, 132, "13.0 (driver 13.0)", "13.0"};
const device_desc h100{"NVIDIA H100 80GB HBM3", "sm_90a", 9, 0, 132, "13.0 (driver 13.0)", "13.0"};

tuning_key key_of(const device_desc& d, const std::string& shape_text, const std::string& space) {
  tuning_key k =
      make_tuning_key(d, parse_shape(shape_text), searched_space{}, kernel_sources::embedded());
  k.space = space;
  return k;
}

// A tuning's two ok variants, ranked, on the key's device and shape.
std::vector<record> tuning_of(const device_desc& d, const tuning_key& k, const std::string& best,
                              double best_ms, const std::string& second) {
  std::vector<record> rows(2);
  for (int i = 0; i < 2; ++i) {
    rows[i].device = d;
    rows[i].shape = k.shape;
    rows[i].family = "fa2";
    rows[i].config = parse_config_name(i == 0 ? best : second);
    rows[i].median_ms = best_ms * (1 + 0.1 * i);
    rows[i].tflops = 100.0 / rows[i].median_ms;
    rows[i].rank = i + 1;
    rows[i].status = status::ok;
    rows[i].measured = measurement::full;
  }
  return rows;
}

tuning_entry entry(int64_t id, const device_desc& d, const std::string& shape_text,
                   const std::string& tuned_at,
                   const std::string& space = "screen; hopper: default") {
  tuning_entry e;
  e.id = id;
  e.key = key_of(d, shape_text, space);
  e.tuned_at = tuned_at;
  return e;
}

TEST(choose_entries, one_device_and_distinct_shapes_read_everything_without_a_note) {
  const auto c = choose_entries({entry(1, h200, "4,32,4096,128", "2026-01-01 00:00:00"),
                                 entry(2, h200, "16,16,1024,64", "2026-01-01 00:00:01")},
                                "", "t.sqlite");
  EXPECT_EQ(c.ids, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(c.notes.empty());
  EXPECT_TRUE(choose_entries({}, "", "t.sqlite").ids.empty());
}

TEST(choose_entries, two_devices_are_refused_with_both_named_and_the_option_that_picks_one) {
  const std::vector<tuning_entry> both{entry(1, h200, "4,32,4096,128", "2026-01-01 00:00:00"),
                                       entry(2, h100, "4,32,4096,128", "2026-01-01 00:00:01"),
                                       entry(3, h100, "16,16,1024,64", "2026-01-01 00:00:02")};
  const std::string why = invalid_input_message([&] { choose_entries(both, "", "t.sqlite"); });
  EXPECT_NE(why.find("'t.sqlite' holds results of 2 devices"), std::string::npos) << why;
  EXPECT_NE(why.find("NVIDIA H200 (cc 9.0, 132 SMs): 1 tuning(s)"), std::string::npos) << why;
  EXPECT_NE(why.find("NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs): 2 tuning(s)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("--device-name"), std::string::npos) << why;

  const auto h100s = choose_entries(both, "nvidia h100 80gb hbm3", "t.sqlite");  // any case
  EXPECT_EQ(h100s.ids, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(h100s.notes.size(), 1u);
  EXPECT_NE(h100s.notes[0].find("1 tuning(s) of other devices left out"), std::string::npos)
      << h100s.notes[0];
  EXPECT_EQ(choose_entries(both, "NVIDIA H200", "t.sqlite").ids, (std::vector<int64_t>{1}));

  const std::string unknown =
      invalid_input_message([&] { choose_entries(both, "NVIDIA A100", "t.sqlite"); });
  EXPECT_NE(unknown.find("--device-name 'NVIDIA A100'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("NVIDIA H200 (cc 9.0, 132 SMs)"), std::string::npos) << unknown;
}

TEST(choose_entries, one_name_of_two_devices_needs_the_whole_description) {
  device_desc fewer_sms = h200;
  fewer_sms.sm_count = 114;
  const std::vector<tuning_entry> both{entry(1, h200, "4,32,4096,128", "2026-01-01 00:00:00"),
                                       entry(2, fewer_sms, "4,32,4096,128", "2026-01-01 00:00:01")};
  const std::string why =
      invalid_input_message([&] { choose_entries(both, "NVIDIA H200", "t.sqlite"); });
  EXPECT_NE(why.find("names 2 devices"), std::string::npos) << why;
  EXPECT_EQ(choose_entries(both, "NVIDIA H200 (cc 9.0, 114 SMs)", "t.sqlite").ids,
            (std::vector<int64_t>{2}));
}

TEST(choose_entries, two_tunings_of_one_shape_the_newest_wins_and_a_note_says_so) {
  // Entry 4 has the higher id but the earlier date (a database copied from elsewhere): the date
  // decides.
  const std::vector<tuning_entry> entries{
      entry(2, h200, "4,32,4096,128", "2026-03-01 10:00:00", "screen; hopper: default"),
      entry(3, h200, "16,16,1024,64", "2026-03-01 10:00:00"),
      entry(4, h200, "4,32,4096,128", "2026-02-01 10:00:00", "exhaustive; hopper: default"),
      entry(5, h200, "16,16,1024,64", "2026-03-01 10:00:00", "exhaustive; hopper: default")};
  const auto c = choose_entries(entries, "", "t.sqlite");
  EXPECT_EQ(c.ids, (std::vector<int64_t>{2, 5}));  // of equal dates, the later entry
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_NE(c.notes[0].find(
                "was tuned 2 times on NVIDIA H200: reading entry 2, the newest (tuned 2026-03-01 "
                "10:00:00; screen; hopper: default); left out: entry 4 (tuned 2026-02-01 10:00:00; "
                "exhaustive; hopper: default)"),
            std::string::npos)
      << c.notes[0];
  EXPECT_NE(c.notes[1].find("reading entry 5"), std::string::npos) << c.notes[1];
}

class db_input_test : public ::testing::Test {
 protected:
  temp_dir m_dir{"attn-entry-choice"};
  std::string db_path() const { return m_dir / "tuned.sqlite"; }
  void put(const device_desc& d, const std::string& shape_text, const std::string& space,
           const std::string& best, double ms, const std::string& tuned_at) {
    const tuning_key k = key_of(d, shape_text, space);
    tuned_db::open(db_path()).put(k, tuning_of(d, k, best, ms, "m64_n64_w4_s2"), tuned_at);
  }
};

TEST_F(db_input_test, a_database_of_one_device_reads_only_the_newest_tuning_of_each_shape) {
  put(h200, "4,32,4096,128", "screen; hopper: default", "m128_n64_w8_s2", 2.0,
      "2026-03-01 10:00:00");
  put(h200, "4,32,4096,128", "exhaustive; hopper: default", "m128_n128_w8_s3", 1.9,
      "2026-03-02 10:00:00");
  put(h200, "16,16,1024,64", "screen; hopper: default", "m64_n64_w4_s1", 0.3,
      "2026-03-01 10:00:00");
  const results_input in = read_results(db_path(), "");
  ASSERT_EQ(in.records.size(), 4u);  // two tunings of two rows, not three
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_NE(in.notes[0].find("was tuned 2 times"), std::string::npos) << in.notes[0];
  const auto best = best_table(in.records);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(name(best[0].best.config), "m128_n128_w8_s3");
  EXPECT_DOUBLE_EQ(best[0].best.median_ms, 1.9);
  // The runner-up is the newest tuning's own rank 2, not the older tuning's rank 1.
  ASSERT_TRUE(best[0].runner_up.has_value());
  EXPECT_EQ(name(best[0].runner_up->config), "m64_n64_w4_s2");
  EXPECT_NEAR(best[0].runner_up->median_ms, 1.9 * 1.1, 1e-12);
}

TEST_F(db_input_test, export_of_a_database_of_two_devices_refuses_then_exports_the_one_chosen) {
  put(h200, "4,32,4096,128", "screen; hopper: default", "m128_n64_w8_s2", 2.0,
      "2026-03-01 10:00:00");
  put(h100, "4,32,4096,128", "screen; hopper: default", "m128_n128_w8_s3", 2.5,
      "2026-03-01 10:00:00");
  const std::string out = m_dir / "table.csv";
  const std::string why = invalid_input_message([&] {
    run_export(parsed({"export", db_path(), "--out", out}));
  });
  EXPECT_NE(why.find("holds results of 2 devices"), std::string::npos) << why;
  EXPECT_NE(why.find("NVIDIA H100 80GB HBM3"), std::string::npos) << why;
  EXPECT_FALSE(std::filesystem::exists(out));

  EXPECT_EQ(run_export(parsed(
                {"export", db_path(), "--device-name", "NVIDIA H100 80GB HBM3", "--out", out})),
            0);
  const std::string table = slurp(out);
  EXPECT_NE(table.find("NVIDIA H100 80GB HBM3"), std::string::npos) << table;
  EXPECT_EQ(table.find("NVIDIA H200"), std::string::npos) << table;
  EXPECT_NE(table.find(",128,128,8,3,"), std::string::npos) << table;  // the H100's config
}

TEST_F(db_input_test, a_results_csv_of_two_devices_is_refused_too_and_filtered_with_the_option) {
  auto rows =
      tuning_of(h200, key_of(h200, "4,32,4096,128", ""), "m128_n64_w8_s2", 2.0, "m64_n64_w4_s2");
  const auto other =
      tuning_of(h100, key_of(h100, "4,32,4096,128", ""), "m128_n128_w8_s3", 2.5, "m64_n64_w4_s2");
  rows.insert(rows.end(), other.begin(), other.end());
  const std::string csv = m_dir / "mixed.csv";
  write_csv(csv, rows);
  const std::string why = invalid_input_message([&] { read_results(csv, ""); });
  EXPECT_NE(why.find("NVIDIA H200 (cc 9.0, 132 SMs): 2 row(s)"), std::string::npos) << why;
  const results_input in = read_results(csv, "NVIDIA H200");
  ASSERT_EQ(in.records.size(), 2u);
  EXPECT_EQ(in.records[0].device.name, "NVIDIA H200");
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_NE(in.notes[0].find("2 row(s) of other devices left out"), std::string::npos)
      << in.notes[0];
}

}  // namespace
}  // namespace attn
