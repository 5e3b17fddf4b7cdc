// The tuned-results database: create, hit, misses, --retune, schema migration, files that are not
// ours, and several processes writing at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/db_support.hpp"
#include "invalid_input_message.hpp"
#include "parsed_options.hpp"
#include "db/shapes_to_tune.hpp"
#include "db/tuned_db.hpp"
#include "db/tuning_key.hpp"
#include "report/csv.hpp"
#include "codegen/family.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class tuned_db_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / (std::string("attn_db_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string path(const std::string& name = "tuned.sqlite") const { return (m_dir / name).string(); }
  fs::path m_dir;
};

tuning_key key(int64_t batch = 4) {
  tuning_key k;
  k.device = "NVIDIA H200";
  k.cc = "9.0";
  k.sm_count = 132;
  k.cuda_version = "13.0 (driver 13.0)";
  k.nvrtc_version = "13.0";
  k.kernel_hashes = "fa2=0123456789abcdef,wgmma=fedcba9876543210";
  k.shape = parse_shape(fmt::format("{},32,4096,128", batch));
  k.space = "screen; fa2: block_m=64 block_n=64 warps=4 stages=2";
  return k;
}

std::vector<record> tuning(double best_ms, const std::string& best_config = "m128_n64_w8_s2") {
  std::vector<record> rows(3);
  rows[0].config = parse_config_name(best_config);
  rows[0].median_ms = best_ms;
  rows[0].rank = 1;
  rows[0].tflops = 400;
  rows[0].noise = 0.004;
  rows[0].clocks = {1980, 1830, 60, 500, 0};
  rows[0].gbps = 3000, rows[0].copy_fraction = 0.75, rows[0].copy_gbps = 4000;
  rows[0].joules_per_call = 0.5, rows[0].tflops_per_watt = 2.25;
  rows[1].config = parse_config_name("m64_n64_w4_s2");
  rows[1].median_ms = best_ms * 1.1;
  rows[1].rank = 2;
  rows[1].clocks = {1980, 1980, 61, 490, 0x4};  // a throttle reason other than idle
  for (int i = 0; i < 2; ++i) rows[i].status = status::ok, rows[i].measured = measurement::full;
  rows[2].status = status::pruned;
  rows[2].message = "shared memory, too much";
  return rows;
}

std::string bytes_of(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(tuned_db_test, create_then_hit) {
  tuned_db db = tuned_db::open(path("sub/dir/tuned.sqlite"));  // the directory is created
  EXPECT_EQ(db.schema_version(), db_schema_version);
  EXPECT_TRUE(looks_like_sqlite(path("sub/dir/tuned.sqlite")));
  EXPECT_FALSE(db.find(key()).has_value());
  db.put(key(), tuning(1.5), "2026-12-01 08:00:00");
  const auto hit = db.find(key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->best_config, "m128_n64_w8_s2");
  EXPECT_EQ(hit->runner_up, "fa2 m64_n64_w4_s2");
  EXPECT_DOUBLE_EQ(hit->median_ms, 1.5);
  EXPECT_DOUBLE_EQ(hit->noise, 0.004);
  EXPECT_EQ(hit->tuned_at, "2026-12-01 08:00:00");
  EXPECT_EQ(hit->version, ATTN_TUNE_VERSION);
  EXPECT_EQ(hit->sm_clock_min_mhz, 1830);
  EXPECT_EQ(hit->sm_clock_max_mhz, 1980);
  EXPECT_EQ(hit->throttled, 1);
  ASSERT_EQ(hit->records.size(), 3u);  // the whole ranked table comes back
  EXPECT_EQ(hit->records[2].message, "shared memory, too much");
  EXPECT_EQ(hit->records[0].measured, measurement::full);
  // Reopened by another connection: the same answer.
  EXPECT_TRUE(tuned_db::open(path("sub/dir/tuned.sqlite")).find(key()).has_value());
}

TEST_F(tuned_db_test, another_device_driver_kernel_hash_shape_or_space_misses) {
  tuned_db db = tuned_db::open(path());
  db.put(key(), tuning(1.5), utc_now());
  auto k = key();
  k.device = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(db.find(k).has_value());
  k = key();
  k.cuda_version = "13.0 (driver 13.1)";
  EXPECT_FALSE(db.find(k).has_value());
  k = key();
  k.kernel_hashes = "fa2=0123456789abcdee,wgmma=fedcba9876543210";
  EXPECT_FALSE(db.find(k).has_value());
  k = key();
  k.sm_count = 114;
  EXPECT_FALSE(db.find(k).has_value());
  k = key();
  k.shape.causal = true;
  EXPECT_FALSE(db.find(k).has_value());
  k = key();
  k.space = "exhaustive; fa2: block_m=64 block_n=64 warps=4 stages=2";
  EXPECT_FALSE(db.find(k).has_value());
  EXPECT_TRUE(db.find(key()).has_value());
}

TEST_F(tuned_db_test, retune_replaces_the_entry) {
  tuned_db db = tuned_db::open(path());
  db.put(key(), tuning(1.5), "2026-12-01 08:00:00");
  db.put(key(2), tuning(0.8), "2026-12-01 08:00:01");
  db.put(key(), tuning(1.4, "m128_n128_w8_s3"), "2026-12-01 09:00:00");
  const auto entries = db.list();
  ASSERT_EQ(entries.size(), 2u);
  const auto hit = db.find(key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->best_config, "m128_n128_w8_s3");
  EXPECT_EQ(hit->tuned_at, "2026-12-01 09:00:00");
  EXPECT_EQ(db.find(key())->records.size() + db.find(key(2))->records.size(), 6u);
  EXPECT_TRUE(db.forget(hit->id));
  EXPECT_FALSE(db.forget(hit->id));
  EXPECT_FALSE(db.find(key()).has_value());
  EXPECT_TRUE(db.get(entries[1].id).has_value() || db.get(entries[0].id).has_value());
}

TEST_F(tuned_db_test, a_version_1_database_is_migrated_and_keeps_its_rows) {
  {
    sqlite_connection c(path(), true);
    c.exec(db_schema_v1_sql());
    auto insert = c.prepare(
        "INSERT INTO tunings (device, cc, sm_count, cuda_version, nvrtc_version, kernel_hashes, batch, heads, "
        "kv_heads, q_len, kv_len, head_dim, dtype, layout, causal, space, best_family, best_config, tflops, "
        "median_ms, noise, max_error, runner_up, tuned_at, version, records_csv) VALUES ('NVIDIA H200', '9.0', "
        "132, '13.0 (driver 13.0)', '13.0', 'fa2=0123456789abcdef,wgmma=fedcba9876543210', 4, 32, 32, 4096, "
        "4096, 128, 'bf16', 'bhsd', 0, 'screen; fa2: block_m=64 block_n=64 warps=4 stages=2', 'fa2', "
        "'m64_n64_w4_s2', 300, 2.0, 0.01, 0.001, '', '2026-11-30 10:00:00', '0.1', ?1)");
    insert.bind(1, csv_text(tuning(2.0, "m64_n64_w4_s2")));
    insert.step();
  }
  tuned_db db = tuned_db::open(path());
  EXPECT_EQ(db.schema_version(), db_schema_version);
  const auto hit = db.find(key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->best_config, "m64_n64_w4_s2");
  EXPECT_EQ(hit->sm_clock_max_mhz, 0);  // the column version 2 added, defaulted
  EXPECT_EQ(hit->gbps, 0.0);            // and version 3's
  db.put(key(), tuning(1.5), utc_now());  // and it is writable as the current version
  EXPECT_EQ(db.find(key())->sm_clock_max_mhz, 1980);
}

TEST_F(tuned_db_test, a_version_2_database_gains_the_rate_columns_and_keeps_its_rows) {
  {
    tuned_db v3 = tuned_db::open(path());
    v3.put(key(), tuning(2.0, "m64_n64_w4_s2"), "2026-11-30 10:00:00");
  }
  {  // back to what version 2 had: no rate columns
    sqlite_connection c(path(), true);
    for (const char* column : {"gbps", "copy_fraction", "copy_gbps", "joules_per_call", "tflops_per_watt"})
      c.exec(fmt::format("ALTER TABLE tunings DROP COLUMN {}", column));
    c.exec("PRAGMA user_version = 2");
  }
  EXPECT_NE(error_of([&] { tuned_db::open_read_only(path()); }).find("older than"), std::string::npos);
  tuned_db db = tuned_db::open(path());
  EXPECT_EQ(db.schema_version(), 3);
  const auto hit = db.find(key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->best_config, "m64_n64_w4_s2");
  EXPECT_EQ(hit->gbps, 0.0);  // not measured then
  EXPECT_EQ(hit->records[0].gbps, 3000.0);  // the records kept theirs
  db.put(key(), tuning(1.5), utc_now());
  const auto now = db.find(key());
  EXPECT_EQ(now->gbps, 3000.0);
  EXPECT_EQ(now->copy_fraction, 0.75);
  EXPECT_EQ(now->copy_gbps, 4000.0);
  EXPECT_EQ(now->joules_per_call, 0.5);
  EXPECT_EQ(now->tflops_per_watt, 2.25);
  EXPECT_EQ(now->records[0].joules_per_call, 0.5);
}

TEST_F(tuned_db_test, a_file_that_is_not_sqlite_is_refused_and_left_alone) {
  std::ofstream(path("results.csv")) << "schema_version,device\n4,NVIDIA H200\n";
  const std::string before = bytes_of(path("results.csv"));
  const std::string msg = error_of([&] { tuned_db::open(path("results.csv")); });
  EXPECT_NE(msg.find(path("results.csv")), std::string::npos) << msg;
  EXPECT_NE(msg.find("not an attn-tune database"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mv '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--no-db"), std::string::npos) << msg;
  EXPECT_EQ(bytes_of(path("results.csv")), before);
  // A real database whose pages were overwritten with garbage: an error, not a crash.
  { tuned_db::open(path("broken.sqlite")).put(key(), tuning(1.5), utc_now()); }
  fs::remove(path("broken.sqlite-wal"));
  fs::remove(path("broken.sqlite-shm"));
  {
    std::fstream f(path("broken.sqlite"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    const std::string junk(4000, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const std::string broken = error_of([&] {
    tuned_db db = tuned_db::open(path("broken.sqlite"));
    db.find(key());
  });
  EXPECT_NE(broken.find(path("broken.sqlite")), std::string::npos) << broken;
}

TEST_F(tuned_db_test, another_programs_sqlite_database_is_refused) {
  {
    sqlite_connection c(path("other.sqlite"), true);
    c.exec("CREATE TABLE songs (title TEXT)");
  }
  const std::string msg = error_of([&] { tuned_db::open(path("other.sqlite")); });
  EXPECT_NE(msg.find("not an attn-tune database"), std::string::npos) << msg;
  sqlite_connection c(path("other.sqlite"), false);
  auto q = c.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'tunings'");
  q.step();
  EXPECT_EQ(q.integer(0), 0);  // nothing was added to it
}

TEST_F(tuned_db_test, a_newer_schema_is_refused_naming_the_file) {
  {
    sqlite_connection c(path(), true);
    c.exec(db_schema_v1_sql());
    c.exec("PRAGMA user_version = 99");
  }
  const std::string msg = error_of([&] { tuned_db::open(path()); });
  EXPECT_NE(msg.find("schema version 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path()), std::string::npos) << msg;
  sqlite_connection c(path(), false);
  auto q = c.prepare("PRAGMA user_version");
  q.step();
  EXPECT_EQ(q.integer(0), 99);  // never overwritten
}

// `writers` processes at once, each storing `each` entries of its own and rewriting one shared
// entry: every row is there afterwards and the file is intact.
void concurrent_writers(const std::string& file, int writers, int each) {
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        tuned_db db = tuned_db::open(file);  // each opens (and may create) the file itself
        for (int i = 0; i < each; ++i) {
          db.put(key(1000 * (w + 1) + i), tuning(1.0 + i), utc_now());
          db.put(key(), tuning(2.0 + w), utc_now());
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "writer %d: %s\n", w, e.what());
        rc = 1;
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  tuned_db db = tuned_db::open(file);
  EXPECT_EQ(db.list().size(), static_cast<size_t>(writers * each + 1));
  for (int w = 0; w < writers; ++w)
    for (int i = 0; i < each; ++i) EXPECT_TRUE(db.find(key(1000 * (w + 1) + i)).has_value()) << w << " " << i;
  sqlite_connection c(file, false);
  auto q = c.prepare("PRAGMA integrity_check");
  q.step();
  EXPECT_EQ(q.text(0), "ok");
}

TEST_F(tuned_db_test, two_concurrent_writer_processes) { concurrent_writers(path(), 2, 25); }
TEST_F(tuned_db_test, four_concurrent_writer_processes) { concurrent_writers(path(), 4, 25); }

TEST_F(tuned_db_test, export_and_check_read_a_database_as_they_read_a_csv) {
  { tuned_db::open(path()).put(key(), tuning(1.5), utc_now()); }
  { tuned_db::open(path()).put(key(2), tuning(0.9), utc_now()); }
  const auto from_db = read_results(path(), "");
  EXPECT_EQ(from_db.records.size(), 6u);
  EXPECT_TRUE(from_db.notes.empty());
  write_csv(path("r.csv"), tuning(1.5));
  EXPECT_EQ(read_results(path("r.csv"), "").records.size(), 3u);
}

TEST(db_command, refuses_no_db) {
  for (const char* action : {"list", "path"}) {
    const std::string why = testing::invalid_input_message([&] { testing::parsed({"--no-db", "db", action}); });
    EXPECT_NE(why.find(fmt::format("attn-tune db {} reads or edits the tuned-results database", action)),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("--no-db"), std::string::npos) << why;
  }
  EXPECT_NO_THROW(testing::parsed({"db", "list"}));
}

TEST(tuning_key, names_the_space_the_search_and_each_familys_sources) {
  searched_space s;
  s.families = {"fa2"};
  s.spaces = {parse_space({"block_m=64,128", "block_n=64", "warps=4", "stages=2"})};
  EXPECT_EQ(describe_space(s), "screen; fa2: block_m=64,128 block_n=64 warps=4 stages=2");
  s.search = search_kind::random;
  s.samples = 8;
  s.seed = 3;
  EXPECT_EQ(describe_space(s).rfind("random 8 seed 3; fa2:", 0), 0u) << describe_space(s);
  s.search = search_kind::exhaustive;
  s.configs = {"m64_n64_w4_s2"};
  EXPECT_EQ(describe_space(s), "exhaustive; fa2: configs=m64_n64_w4_s2");
  // A best chosen by energy answers another question than one chosen by time (the key before
  // --objective was by time, and is kept).
  s.objective = objective::energy;
  EXPECT_EQ(describe_space(s), "exhaustive; fa2: configs=m64_n64_w4_s2; objective energy");
  s.inputs = input_kind::wide;
  EXPECT_EQ(describe_space(s), "exhaustive; fa2: configs=m64_n64_w4_s2; inputs wide; objective energy");
  s.regime = timing_regime::sustained;  // and one timed after the clock settled, one timed in a burst
  EXPECT_EQ(describe_space(s), "exhaustive; fa2: configs=m64_n64_w4_s2; inputs wide; objective energy; regime sustained");
  s.regime = timing_regime::burst;
  s.objective = objective::time;
  s.inputs = input_kind::normal;

  const kernel_sources embedded = kernel_sources::embedded();
  const std::string h = kernel_hashes({"fa2", "wgmma"}, embedded);
  EXPECT_EQ(h.rfind("fa2=", 0), 0u) << h;
  EXPECT_NE(h.find(",wgmma="), std::string::npos) << h;
  // Editing one of fa2's own files changes fa2's hash.
  auto files = embedded.files();
  const auto& fa2_files = find_family("fa2").source_files;
  for (auto& f : files)
    if (f.name == fa2_files.front()) f.text += "\n// edited\n";
  const kernel_sources edited = kernel_sources::from_files(files, "test");
  EXPECT_NE(kernel_hashes({"fa2"}, edited), kernel_hashes({"fa2"}, embedded));

  device_desc d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  const tuning_key k = make_tuning_key(d, parse_shape("1,2,128,64"), s, embedded);
  EXPECT_EQ(k.cc, "9.0");
  EXPECT_EQ(k.shape.q_len, 128);
}

// issue 11, item 14: a tuning checked on wide or sink inputs is a different question from one
// checked on standard-normal inputs (entries from before --inputs were normal: their key is kept).
TEST_F(tuned_db_test, a_tuning_on_other_inputs_is_not_answered_from_one_on_normal_inputs) {
  searched_space s;
  s.families = {"fa2"};
  s.spaces = {parse_space({"block_m=64", "block_n=64", "warps=4", "stages=2"})};
  EXPECT_EQ(describe_space(s), "screen; fa2: block_m=64 block_n=64 warps=4 stages=2");
  const kernel_sources embedded = kernel_sources::embedded();
  device_desc d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  const problem sh = parse_shape("4,32,4096,128");
  tuned_db db = tuned_db::open(path());
  db.put(make_tuning_key(d, sh, s, embedded), tuning(1.0), utc_now());
  EXPECT_TRUE(db.find(make_tuning_key(d, sh, s, embedded)).has_value());
  for (const input_kind k : {input_kind::wide, input_kind::sink}) {
    s.inputs = k;
    EXPECT_EQ(describe_space(s), "screen; fa2: block_m=64 block_n=64 warps=4 stages=2; inputs " + to_string(k));
    EXPECT_FALSE(db.find(make_tuning_key(d, sh, s, embedded)).has_value()) << to_string(k);
  }
  db.put(make_tuning_key(d, sh, s, embedded), tuning(2.0), utc_now());  // sink
  const auto sink = db.find(make_tuning_key(d, sh, s, embedded));
  ASSERT_TRUE(sink.has_value());
  EXPECT_EQ(sink->median_ms, 2.0);
  s.inputs = input_kind::normal;
  EXPECT_EQ(db.find(make_tuning_key(d, sh, s, embedded))->median_ms, 1.0);
}

TEST_F(tuned_db_test, sweep_skips_shapes_in_the_database_unless_retune) {
  tuned_db db = tuned_db::open(path());
  db.put(key(2), tuning(1.0), utc_now());
  const std::vector<problem> shapes = {key(1).shape, key(2).shape, key(3).shape};
  auto key_of = [](const problem& s) {
    tuning_key k = key();
    k.shape = s;
    return k;
  };
  const auto plan = shapes_to_tune(shapes, &db, key_of, false);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_FALSE(plan[0].has_value());
  ASSERT_TRUE(plan[1].has_value());
  EXPECT_EQ(plan[1]->best_config, "m128_n64_w8_s2");
  EXPECT_FALSE(plan[2].has_value());
  for (const auto& p : shapes_to_tune(shapes, &db, key_of, true)) EXPECT_FALSE(p.has_value());     // --retune
  for (const auto& p : shapes_to_tune(shapes, nullptr, key_of, false)) EXPECT_FALSE(p.has_value());  // --no-db
}

}  // namespace
}  // namespace attn
