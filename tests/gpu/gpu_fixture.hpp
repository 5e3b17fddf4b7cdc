#pragma once
// GPU tests skip with a message when there is no CUDA device.
#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/device.hpp"
#include "codegen/cache.hpp"

namespace attn::testing {

inline bool have_gpu(std::string* why) { return cuda_device_count(why) > 0; }

class gpu_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!have_gpu(&why)) GTEST_SKIP() << "no CUDA device (" << why << "): GPU test skipped";
    m_gpu = open_cuda_device(0);
  }
  gpu_info m_gpu;
  compile_cache m_cache{default_cache_dir()};
};

}  // namespace attn::testing
