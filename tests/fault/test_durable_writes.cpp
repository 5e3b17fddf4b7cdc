// Issue 20, item 6: a failed write keeps the old file whole and reports the error, for the
// results CSV, the tuned-results database and a cache entry. Run under the LD_PRELOAD shim
// tests/fault/fault_inject.cpp, which fails write, fsync or rename on demand for files in this
// test's folder only.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "codegen/cache.hpp"
#include "db/tuned_db.hpp"
#include "report/csv.hpp"
#include "../cpu/temp_dir.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// Arms the shim for `call` on files below `dir` while in scope.
class fault {
 public:
  fault(const std::string& call, const fs::path& dir) {
    ::setenv("ATTN_FAULT_MATCH", dir.c_str(), 1);
    ::setenv("ATTN_FAULT", call.c_str(), 1);
  }
  ~fault() {
    ::unsetenv("ATTN_FAULT");
    ::unsetenv("ATTN_FAULT_MATCH");
  }
};

class durable_writes : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_NE(dlsym(RTLD_DEFAULT, "attn_fault_inject_loaded"), nullptr)
        << "run under LD_PRELOAD=libattn_fault_inject.so (ctest does)";
  }
  // Every file in the folder except `keep`: the temporary files a failed write must not leave.
  std::vector<std::string> others(const std::string& keep_prefix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir.path()))
      if (e.is_regular_file() && e.path().filename().string().rfind(keep_prefix, 0) != 0)
        out.push_back(e.path().filename().string());
    return out;
  }
  temp_dir dir{"attn-durable"};
};

std::vector<record> rows(double median) {
  std::vector<record> out(2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].family = "fa2";
    out[i].config = parse_config_name(i ? "m128_n64_w4_s2" : "m64_n64_w4_s2");
    out[i].status = status::ok;
    out[i].measured = measurement::full;
    out[i].median_ms = median * (1 + i);
    out[i].rank = static_cast<int>(i + 1);
  }
  return out;
}

TEST_P(durable_writes, a_results_csv_keeps_its_old_rows) {
  const std::string path = dir / "results.csv";
  write_csv(path, rows(1.0));
  const std::string before = slurp(path);
  {
    fault f(GetParam(), dir.path());
    try {
      write_csv(path, rows(2.0));
      ADD_FAILURE() << "a failed " << GetParam() << " was not reported";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write '" + path + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(slurp(path), before);  // byte for byte: the old file, whole, end line included
  EXPECT_EQ(read_csv(path)[0].median_ms, 1.0);
  EXPECT_EQ(others("results.csv"), std::vector<std::string>{});  // no temporary file left
  // Without the fault the same write goes through.
  write_csv(path, rows(2.0));
  EXPECT_EQ(read_csv(path)[0].median_ms, 2.0);
}

TEST_P(durable_writes, a_cache_entry_keeps_its_old_binary_and_the_failure_is_said) {
  const compile_cache cache((dir.path() / "cache").string());
  const std::string key = cache.key("extern \"C\" __global__ void k() {}", "sm_90a", {});
  compile_result old;
  old.ok = true;
  old.cubin = std::string("old binary\0with a zero", 22);
  old.log = "old log";
  cache.store(key, old);
  ASSERT_TRUE(cache.load(key).has_value());
  compile_result fresh = old;
  fresh.cubin = "new binary";
  {
    fault f(GetParam(), dir.path());
    ::testing::internal::CaptureStderr();
    cache.store(key, fresh);  // best effort: said, not thrown
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("cannot be written"), std::string::npos) << said;
  }
  const auto loaded = cache.load(key);
  ASSERT_TRUE(loaded.has_value()) << "the old entry must still be whole";
  EXPECT_EQ(loaded->cubin, old.cubin);
  EXPECT_EQ(loaded->log, "old log");
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "cache"))
    if (e.is_regular_file() && e.path().string() != cache.entry_path(key)) left.push_back(e.path().string());
  EXPECT_EQ(left, std::vector<std::string>{});
}

tuning_key key() {
  tuning_key k;
  k.device = "NVIDIA H200";
  k.cc = "9.0";
  k.sm_count = 132;
  k.cuda_version = "13.0";
  k.nvrtc_version = "13.0";
  k.kernel_hashes = "fa2=0123456789abcdef";
  k.shape = parse_shape("4,32,4096,128");
  k.space = "screen; fa2: block_m=64 block_n=64 warps=4 stages=2";
  return k;
}

TEST_P(durable_writes, the_database_keeps_its_old_entry_and_the_failure_is_thrown) {
  if (std::string(GetParam()) == "rename") GTEST_SKIP() << "SQLite never renames";
  const std::string path = dir / "tuned.sqlite";
  {
    tuned_db db = tuned_db::open(path);
    db.put(key(), rows(1.0), "2026-12-01 08:00:00");
    auto other = key();
    other.shape.batch = 2;
    fault f(GetParam(), dir.path());
    EXPECT_ANY_THROW(db.put(key(), rows(2.0), "2026-12-01 09:00:00"));
    EXPECT_ANY_THROW(db.put(other, rows(3.0), "2026-12-01 09:00:00"));
  }
  const tuned_db db = tuned_db::open(path);
  const auto hit = db.find(key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->median_ms, 1.0);
  EXPECT_EQ(hit->tuned_at, "2026-12-01 08:00:00");
  ASSERT_EQ(hit->records.size(), 2u);
  EXPECT_EQ(db.list().size(), 1u);  // nor half of the second put
}

INSTANTIATE_TEST_SUITE_P(each_call, durable_writes, ::testing::Values("write", "fsync", "rename"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace attn
