// The tuned-results database as a library's table: the exact tuned shape of this device (and the
// buckets made from the winners), which entry wins when several hold one shape, and that opening
// it never changes the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "db/sqlite.hpp"
#include "db/tuned_db.hpp"
#include "db/tuning_key.hpp"
#include "library/bundle.hpp"
#include "library/errors.hpp"
#include "library/tuned_db_table.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

device_desc h200() {
  device_desc d;
  d.name = "NVIDIA H200", d.arch = "sm_90a", d.cc_major = 9, d.cc_minor = 0, d.sm_count = 132;
  return d;
}

// A tuning of `shape_text` on `device`, won by `family config` in `ms`; `sources` is the kernel
// hashes column ("" = this build's fa2 and hopper sources).
tuning_key key_of(const device_desc& device, const std::string& shape_text, const std::string& space,
                  std::string sources = "") {
  tuning_key k;
  k.device = device.name;
  k.cc = fmt::format("{}.{}", device.cc_major, device.cc_minor);
  k.sm_count = device.sm_count;
  k.cuda_version = "13.0 (driver 13.0)";
  k.nvrtc_version = "13.0";
  k.kernel_hashes = sources.empty() ? kernel_hashes({"fa2", "hopper"}, kernel_sources::embedded()) : sources;
  k.shape = parse_shape(shape_text);
  k.space = space;
  return k;
}

std::vector<record> won_by(const std::string& family, const std::string& config, double ms) {
  std::vector<record> rows(2);
  rows[0].family = family;
  rows[0].config = parse_config_name(config);
  rows[0].median_ms = ms;
  rows[0].tflops = 300;
  rows[0].rank = 1;
  rows[1].config = parse_config_name("m64_n64_w4_s2");
  rows[1].median_ms = ms * 1.2;
  rows[1].rank = 2;
  for (auto& r : rows) r.status = status::ok;
  return rows;
}

void put(const std::string& path, const tuning_key& k, const std::vector<record>& rows) {
  tuned_db::open(path).put(k, rows, "2026-01-01 00:00:00");
}

problem shape_of(const std::string& text) { return parse_shape(text); }

TEST(TunedDbTable, TheExactTunedShapeOfThisDevice) {
  temp_dir dir;
  const std::string db = dir / "tuned.sqlite";
  device_desc a100;
  a100.name = "NVIDIA A100-SXM4-80GB", a100.cc_major = 8, a100.cc_minor = 0, a100.sm_count = 108;
  put(db, key_of(h200(), "4,32,4096,128", "screen"), won_by("hopper", "m128_n128_w12_s2_k5", 2.5));
  put(db, key_of(h200(), "1,8,512,64", "screen"), won_by("fa2", "m64_n64_w4_s2", 0.1));
  put(db, key_of(a100, "4,32,4096,128", "screen"), won_by("fa2", "m128_n64_w4_s3", 6.0));

  const auto table = open_tuned_source(db);
  ASSERT_FALSE(table->empty());
  EXPECT_NO_THROW(table->check_device(h200()));
  auto c = table->candidates(h200(), shape_of("4,32,4096,128"));
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].source, choice_source::tuned);
  EXPECT_EQ(c[0].family, "hopper");
  EXPECT_EQ(name(c[0].config), "m128_n128_w12_s2_k5");
  c = table->candidates(a100, shape_of("4,32,4096,128"));
  EXPECT_EQ(c[0].source, choice_source::tuned);
  EXPECT_EQ(name(c[0].config), "m128_n64_w4_s3");

  // Not tuned, in a winner's bucket (other B and H, N in (2048, 4096]): the bucket; else the fallback.
  c = table->candidates(h200(), shape_of("1,8,3000,128"));
  EXPECT_EQ(c[0].source, choice_source::bucket);
  EXPECT_EQ(name(c[0].config), "m128_n128_w12_s2_k5");
  c = table->candidates(h200(), shape_of("1,8,100,128"));
  EXPECT_EQ(c[0].source, choice_source::fallback);
  // The causal shape was not tuned: not even its bucket matches.
  problem causal = shape_of("4,32,4096,128");
  causal.causal = true;
  EXPECT_EQ(table->candidates(h200(), causal)[0].source, choice_source::fallback);
}

TEST(TunedDbTable, AnotherDeviceIsRefusedByName) {
  temp_dir dir;
  const std::string db = dir / "tuned.sqlite";
  put(db, key_of(h200(), "4,32,4096,128", "screen"), won_by("fa2", "m128_n64_w4_s2", 3));
  device_desc h100 = h200();
  h100.name = "NVIDIA H100 80GB HBM3";
  try {
    open_tuned_source(db)->check_device(h100);
    FAIL() << "no error";
  } catch (const table_error& e) {
    EXPECT_NE(std::string(e.what()).find("not tuned on this device, NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs): it "
                                         "holds NVIDIA H200 (cc 9.0, 132 SMs)"),
              std::string::npos)
        << e.what();
  }
}

TEST(TunedDbTable, OfSeveralEntriesThisBuildsSourcesThenTheFastestWin) {
  temp_dir dir;
  const std::string db = dir / "tuned.sqlite";
  const std::string other_sources = "fa2=0000000000000000,hopper=0000000000000000";
  // Fastest, but tuned with other kernel sources: its timing says nothing of these kernels.
  put(db, key_of(h200(), "4,32,4096,128", "screen; old", other_sources), won_by("hopper", "m128_n64_w12_s2_k5", 1.0));
  put(db, key_of(h200(), "4,32,4096,128", "screen; fa2"), won_by("fa2", "m128_n64_w8_s2", 3.0));
  put(db, key_of(h200(), "4,32,4096,128", "screen; all"), won_by("hopper", "m128_n128_w12_s2_k5", 2.0));
  auto c = open_tuned_source(db)->candidates(h200(), shape_of("4,32,4096,128"));
  EXPECT_EQ(c[0].source, choice_source::tuned);
  EXPECT_EQ(name(c[0].config), "m128_n128_w12_s2_k5");
  // Only other sources: the entry is still this shape's tuning (its config still runs).
  put(db, key_of(h200(), "2,8,1024,64", "screen", other_sources), won_by("fa2", "m64_n64_w4_s1", 0.2));
  c = open_tuned_source(db)->candidates(h200(), shape_of("2,8,1024,64"));
  EXPECT_EQ(c[0].source, choice_source::tuned);
  EXPECT_EQ(name(c[0].config), "m64_n64_w4_s1");
}

TEST(TunedDbTable, OpeningNeverChangesTheFile) {
  temp_dir dir;
  const std::string db = dir / "tuned.sqlite";
  put(db, key_of(h200(), "4,32,4096,128", "screen"), won_by("fa2", "m128_n64_w4_s2", 3));
  const std::string before = slurp(db);
  const auto mtime = std::filesystem::last_write_time(db);
  for (int i = 0; i < 3; ++i) open_tuned_source(db);
  EXPECT_EQ(slurp(db), before);
  EXPECT_EQ(std::filesystem::last_write_time(db), mtime);

  // An older schema is not migrated by a reader: it says how to upgrade it, and the file stays.
  const std::string old_db = dir / "old.sqlite";
  {
    sqlite_connection c(old_db, true);
    c.exec(db_schema_v1_sql());
  }
  const std::string old_bytes = slurp(old_db);
  try {
    open_tuned_source(old_db);
    FAIL() << "no error";
  } catch (const table_error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("schema version 1, older than the {} this build reads",
                                                     db_schema_version)),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(old_db), old_bytes);
}

TEST(TunedDbTable, ForeignOrBrokenFilesAreNamed) {
  temp_dir dir;
  const std::string other = dir / "other.sqlite";
  {
    sqlite_connection c(other, true);
    c.exec("CREATE TABLE t (x INTEGER)");
  }
  try {
    open_tuned_source(other);
    FAIL() << "no error";
  } catch (const table_error& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("cannot read the tuned-results database: '{}' is not an attn-tune database (an SQLite "
                          "database without attn-tune's schema version)",
                          other));
  }
  const std::string junk = dir / "junk.sqlite";
  std::ofstream(junk) << std::string("SQLite format 3\0", 16) << std::string(100, 'x');
  try {
    open_tuned_source(junk);
    FAIL() << "no error";
  } catch (const table_error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("'{}' is not an attn-tune database", junk)), std::string::npos)
        << e.what();
  }
  // tuned_table::load reads table files only, and says what to do with a database.
  try {
    tuned_table::load(other);
    FAIL() << "no error";
  } catch (const table_error& e) {
    EXPECT_NE(std::string(e.what()).find("is a tuned-results database, not a table file: export it first"),
              std::string::npos)
        << e.what();
  }
}

// `attn-tune bundle --table DB`: one device's newest tuning of each shape, its winner as an exact
// tuned shape, with its cubin (NVRTC, no GPU); a database of several devices needs --device-name.
TEST(TunedDbTable, BundledStraightFromTheDatabase) {
  temp_dir dir;
  const std::string db = dir / "tuned.sqlite";
  device_desc a100;
  a100.name = "NVIDIA A100-SXM4-80GB", a100.cc_major = 8, a100.cc_minor = 0, a100.sm_count = 108;
  // Rows as a tuning stores them: with their device and shape.
  auto tuned_on = [](const device_desc& d, std::vector<record> rows) {
    for (auto& r : rows) r.device = d, r.shape = shape_of("1,8,512,64");
    return rows;
  };
  put(db, key_of(h200(), "1,8,512,64", "screen"), tuned_on(h200(), won_by("fa2", "m128_n64_w4_s2", 0.1)));
  const std::string out = dir / "model.attnb";
  ASSERT_EQ(make_bundle(db, "sm_90a", out, "", false), 0);
  const bundle b = parse_bundle(slurp(out), out);
  EXPECT_NE(b.table.find("m128_n64_w4_s2"), std::string::npos) << b.table;
  EXPECT_TRUE(std::any_of(b.kernels.begin(), b.kernels.end(),
                          [](const bundle_kernel& k) { return k.family == "fa2" && k.config == "m128_n64_w4_s2"; }));
  // The table it carries answers the tuned shape with the tuned config.
  const tuned_table t = tuned_table::parse(b.table, out);
  const auto c = t.candidates(h200(), shape_of("1,8,512,64"));
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].source, choice_source::tuned);
  EXPECT_EQ(name(c[0].config), "m128_n64_w4_s2");

  put(db, key_of(a100, "1,8,512,64", "screen"), tuned_on(a100, won_by("fa2", "m64_n64_w4_s3", 0.2)));
  try {
    make_bundle(db, "sm_90a", dir / "two.attnb", "", false);
    FAIL() << "no error";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("--device-name"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "two.attnb"));
  EXPECT_EQ(make_bundle(db, "sm_90a", dir / "two.attnb", "", false, "NVIDIA H200"), 0);
  const std::string two = parse_bundle(slurp(dir / "two.attnb"), "two").table;
  EXPECT_NE(two.find("m128_n64_w4_s2"), std::string::npos) << two;
  EXPECT_EQ(two.find("m64_n64_w4_s3"), std::string::npos) << two;  // the A100's winner is left out

  // Of two tunings of one shape (another space), the newer one's winner.
  tuned_db::open(db).put(key_of(h200(), "1,8,512,64", "exhaustive"),
                         tuned_on(h200(), won_by("fa2", "m64_n64_w4_s2", 0.09)), "2026-02-01 00:00:00");
  EXPECT_EQ(make_bundle(db, "sm_90a", dir / "newer.attnb", "", false, "NVIDIA H200"), 0);
  const std::string newer = parse_bundle(slurp(dir / "newer.attnb"), "newer").table;
  EXPECT_NE(newer.find("m64_n64_w4_s2"), std::string::npos) << newer;
  EXPECT_EQ(newer.find("m128_n64_w4_s2"), std::string::npos) << newer;

  // --device-name picks a database's device; with a table file it is refused, not ignored.
  const std::string csv = dir / "table.csv";
  std::ofstream(csv) << slurp(ATTN_TUNE_SOURCE_DIR "/tests/data/library_export.csv");
  try {
    make_bundle(csv, "sm_90a", dir / "csv.attnb", "", false, "NVIDIA H200");
    FAIL() << "no error";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("is a table file, not the tuned-results database"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attn
