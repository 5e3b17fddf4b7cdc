#pragma once
// GPU tests run on the device --backend auto picks (an AMD GPU in a HIP build, else CUDA), with
// that backend's default family (mfma on HIP, fa2 on CUDA); they skip with a message when there
// is no device, and fail when there is one that does not work (a broken driver must not pass as
// 36 skips). ATTN_TUNE_REQUIRE_GPU=1 (for runs on a GPU machine) turns every skip into a failure.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "codegen/open_gpu.hpp"
#include "backend/runtime.hpp"
#include "codegen/cache.hpp"

namespace attn::testing {

/// The whole text of a file (a child attn-tune's output), empty when it cannot be read.
inline std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The exit status of a shell command (an attn-tune run), -1 when it did not exit.
inline int exit_status_of(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline bool have_gpu(std::string* why) { return runtime_for(detect_backend()).device_count(why) > 0; }

enum class gpu_decision { run, skip, fail };

/// Whether a GPU test runs: with devices, yes; without, it skips only when the machine has no GPU
/// device node at all (so no device, not a broken one) and ATTN_TUNE_REQUIRE_GPU is not set.
inline gpu_decision decide_gpu_test(int device_count, bool device_nodes_present, bool require_gpu) {
  if (device_count > 0) return gpu_decision::run;
  return device_nodes_present || require_gpu ? gpu_decision::fail : gpu_decision::skip;
}

inline bool gpu_device_nodes_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec) || std::filesystem::exists("/dev/nvidia0", ec) ||
         std::filesystem::exists("/dev/kfd", ec);
}

inline bool gpu_required() {
  const char* v = std::getenv("ATTN_TUNE_REQUIRE_GPU");
  return v && std::string(v) == "1";
}

class gpu_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    const int count = runtime_for(detect_backend()).device_count(&why);
    switch (decide_gpu_test(count, gpu_device_nodes_present(), gpu_required())) {
      case gpu_decision::run: break;
      case gpu_decision::skip: GTEST_SKIP() << "no CUDA or HIP device (" << why << "): GPU test skipped";
      case gpu_decision::fail:
        FAIL() << "no usable GPU (" << why << ")"
               << (gpu_required() ? " and ATTN_TUNE_REQUIRE_GPU=1" : ", although this machine has GPU device nodes");
    }
    m_gpu = open_gpu(runtime_for(detect_backend()), 0);
    m_family = default_family(m_gpu.backend).name;
  }
  const device_runtime& rt() const { return runtime_of(m_gpu); }
  gpu_info m_gpu;
  std::string m_family;
  compile_cache m_cache{default_cache_dir()};
};

}  // namespace attn::testing
