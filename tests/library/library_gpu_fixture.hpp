#pragma once
// The library's GPU tests share one fixture: skipped without a CUDA device (failed instead with
// ATTN_TUNE_REQUIRE_GPU=1, on a GPU machine), else a context whose kernel cache is the build's
// test cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"

class library_gpu_test : public testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      const char* required = std::getenv("ATTN_TUNE_REQUIRE_GPU");
      if (required && std::string(required) == "1") FAIL() << "no CUDA device, and ATTN_TUNE_REQUIRE_GPU=1";
      GTEST_SKIP() << "no CUDA device";
    }
    attn_tune::context_options o;
    o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
    m_ctx.emplace(o);
  }
  std::optional<attn_tune::context> m_ctx;
};
