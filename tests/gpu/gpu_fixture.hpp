#pragma once
// GPU tests run on the device --backend auto picks (an AMD GPU in a HIP build, else CUDA), with
// that backend's default family (mfma on HIP, fa2 on CUDA); they skip with a message when there
// is no device.
#include <gtest/gtest.h>

#include <string>

#include "backend/runtime.hpp"
#include "codegen/cache.hpp"

namespace attn::testing {

inline bool have_gpu(std::string* why) { return runtime_for(detect_backend()).device_count(why) > 0; }

class gpu_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!have_gpu(&why)) GTEST_SKIP() << "no CUDA or HIP device (" << why << "): GPU test skipped";
    m_gpu = runtime_for(detect_backend()).open_device(0);
    m_family = default_family(m_gpu.backend).name;
  }
  const device_runtime& rt() const { return runtime_of(m_gpu); }
  gpu_info m_gpu;
  std::string m_family;
  compile_cache m_cache{default_cache_dir()};
};

}  // namespace attn::testing
