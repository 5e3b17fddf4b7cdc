// The bounded wait for a stream (a kernel that never finishes must end a wait, not the run), without
// a GPU: a fake query and a fake runtime whose stream finishes after a set number of asks.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "backend/runtime.hpp"

namespace attn {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

TEST(poll_until, done_at_once_asks_once_and_does_not_sleep) {
  int asks = 0;
  const auto start = clock_type::now();
  EXPECT_TRUE(poll_until([&] { return ++asks > 0; }, 10));
  EXPECT_EQ(asks, 1);
  EXPECT_LT(seconds_since(start), 0.5);
}

TEST(poll_until, done_after_a_few_asks) {
  int asks = 0;
  const auto start = clock_type::now();
  EXPECT_TRUE(poll_until([&] { return ++asks == 5; }, 10));
  EXPECT_EQ(asks, 5);
  EXPECT_LT(seconds_since(start), 0.5);  // 50 + 100 + 200 + 400 us of sleep
}

TEST(poll_until, never_done_gives_up_after_the_timeout) {
  int asks = 0;
  const auto start = clock_type::now();
  EXPECT_FALSE(poll_until([&] { ++asks; return false; }, 0.05));
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 0.05);
  EXPECT_LT(waited, 1.0);
  EXPECT_GE(asks, 2);    // it asked again...
  EXPECT_LT(asks, 100);  // ...but backed off instead of spinning
}

TEST(poll_until, a_failure_goes_through) {
  int asks = 0;
  EXPECT_THROW(poll_until(
                   [&]() -> bool {
                     if (++asks == 3) throw device_error(700, "cudaStreamQuery failed: an illegal memory access");
                     return false;
                   },
                   10),
               device_error);
  EXPECT_EQ(asks, 3);
}

// A runtime with one stream, which finishes on the `finish_at`-th ask (never when 0) or fails
// with a device_error on the `fail_at`-th; everything else refuses.
class fake_runtime final : public device_runtime {
 public:
  int finish_at = 0, fail_at = 0;
  mutable int asks = 0;

  bool finished(stream_t) const override {
    ++asks;
    if (asks == fail_at) throw device_error(700, "cudaStreamQuery failed: an illegal memory access");
    return asks == finish_at;
  }

  backend kind() const override { return backend::cuda; }
  int device_count(std::string*) const override { return 1; }
  gpu_info open_device(int) const override { return refuse<gpu_info>(); }
  int64_t free_memory() const override { return refuse<int64_t>(); }
  void* allocate(int64_t) const override { return refuse<void*>(); }
  void release(void*) const noexcept override {}
  void copy_to_host(void*, const void*, int64_t) const override { refuse<void>(); }
  void copy_to_device(void*, const void*, int64_t) const override { refuse<void>(); }
  void memset(void*, int, int64_t) const override { refuse<void>(); }
  void memset_async(void*, int, int64_t, stream_t) const override { refuse<void>(); }
  void copy_on_device_async(void*, const void*, int64_t, stream_t) const override { refuse<void>(); }
  stream_t create_stream() const override { return refuse<stream_t>(); }
  void destroy_stream(stream_t) const noexcept override {}
  void synchronize(stream_t) const override { refuse<void>(); }
  void synchronize_device() const override { refuse<void>(); }
  event_t create_event() const override { return refuse<event_t>(); }
  void destroy_event(event_t) const noexcept override {}
  void record_event(event_t, stream_t) const override { refuse<void>(); }
  float elapsed_ms(event_t, event_t) const override { return refuse<float>(); }
  module_t load_module(const std::string&) const override { return refuse<module_t>(); }
  void unload_module(module_t) const noexcept override {}
  kernel_t kernel(module_t, const char*) const override { return refuse<kernel_t>(); }
  void set_dynamic_shared_memory(kernel_t, int, int) const override { refuse<void>(); }
  void launch(kernel_t, dims3, dims3, int, stream_t, void**) const override { refuse<void>(); }
  bool context_lost() const override { return refuse<bool>(); }
  bool reset_device(int) const override { return refuse<bool>(); }

 private:
  template <class T>
  static T refuse() {
    throw std::logic_error("the fake runtime only answers finished()");
  }
};

TEST(device_runtime_wait, true_when_the_stream_finishes_in_time) {
  fake_runtime rt;
  rt.finish_at = 4;
  EXPECT_TRUE(rt.wait(nullptr, 10));
  EXPECT_EQ(rt.asks, 4);
  fake_runtime done;
  done.finish_at = 1;
  EXPECT_NO_THROW(done.wait_for_kernels(nullptr, 10));
  EXPECT_FALSE(done.hung());
}

TEST(device_runtime_wait, a_hang_is_false_then_kernel_hung_with_the_seconds_waited) {
  fake_runtime rt;  // never finishes
  EXPECT_FALSE(rt.wait(nullptr, 0.02));
  EXPECT_FALSE(rt.hung());  // a wait that may time out is no hang
  try {
    rt.wait_for_kernels(nullptr, 0.03);
    FAIL() << "a stream that never finished was waited for without kernel_hung";
  } catch (const kernel_hung& e) {
    EXPECT_DOUBLE_EQ(e.seconds, 0.03);
    EXPECT_NE(std::string(e.what()).find("hung: not finished after 0.03 s"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(rt.hung());
}

TEST(device_runtime_wait, a_failed_kernel_throws_its_device_error) {
  fake_runtime rt;
  rt.fail_at = 2;
  EXPECT_THROW(rt.wait_for_kernels(nullptr, 10), device_error);
  EXPECT_FALSE(rt.hung());
}

}  // namespace
}  // namespace attn
