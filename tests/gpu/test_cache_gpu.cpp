// With a driver installed, NVRTC answers a compile it has seen from the driver's compute cache and
// ptxas's report is then missing from its log. attn-tune turns that cache off for itself (unless
// CUDA_CACHE_DISABLE is set), and reads the registers from the cubin when the report is missing
// anyway, so that registers are always reported and its own cache entries are always used.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "gpu_fixture.hpp"
#include "report/csv.hpp"

namespace attn::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(gpu_test, registers_are_reported_and_cache_entries_used_when_the_driver_has_seen_the_compile) {
  if (m_gpu.backend == backend::hip) GTEST_SKIP() << "NVRTC and the CUDA driver's compute cache";
  const fs::path dir = fs::temp_directory_path() / ("attn-tune-cache-gpu-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  int n = 0;
  // One attn-tune --compile-only -v in a new process with the driver's cache in `dir`/nv; returns
  // its CSV rows (and its standard output and error in *err).
  auto compile = [&](const std::string& env, const std::string& cache, std::string* err) {
    const fs::path out = dir / fmt::format("{}.csv", ++n), log = dir / fmt::format("{}.log", n);
    const std::string command =
        "env -u CUDA_CACHE_DISABLE CUDA_CACHE_PATH=" + (dir / "nv").string() + " " + env + " " + ATTN_TUNE_BINARY +
        " --compile-only --family fa2 --shape 1,4,256,64 --space block_m=64 block_n=64 warps=4 stages=1,2 " + cache +
        " -v --out " + out.string() + " > " + log.string() + " 2>&1";
    const int rc = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << command << "\n" << text_of(log);
    if (err) *err = text_of(log);
    return read_csv(out.string());
  };
  auto expect_registers = [](const std::vector<record>& rows, const char* what) {
    ASSERT_EQ(rows.size(), 2u) << what;
    for (const auto& r : rows) EXPECT_GT(r.registers, 0) << what << ": " << name(r.config);
  };
  // attn-tune's default: the driver's cache is off, the same compile twice runs ptxas twice.
  std::string err;
  expect_registers(compile("", "--no-cache", &err), "first compile");
  expect_registers(compile("", "--no-cache", &err), "the same compile again");
  EXPECT_NE(err.find("ptxas info    : Used "), std::string::npos) << err;
  // The driver's cache on, as a user may set it: warmed, then answering; the registers come from
  // the cubin, and an entry of attn-tune's cache written then is used by the next run.
  compile("CUDA_CACHE_DISABLE=0", "--no-cache", nullptr);
  const std::string cache = "--cache-dir " + (dir / "cache").string();
  expect_registers(compile("CUDA_CACHE_DISABLE=0", cache, &err), "driver cache on, compiled");
  // The driver's cache answered (what this test is about; seen with driver 580 and NVRTC 13.0):
  // ptxas did not run, so its report came from nowhere but the cubin.
  EXPECT_EQ(err.find("ptxas info    : Used "), std::string::npos) << err;
  const auto again = compile("CUDA_CACHE_DISABLE=0", cache, &err);
  expect_registers(again, "driver cache on, from attn-tune's cache");
  for (const auto& r : again) EXPECT_TRUE(r.cached) << name(r.config);
  EXPECT_EQ(err.find("compiling it again"), std::string::npos) << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn::testing
