#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/numeric.hpp"
#include "report/npy.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class npy_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("attn_npy_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Checks the fixed part of a version 1.0 file and returns the header dict text.
std::string check_header(const std::string& bytes, size_t data_bytes) {
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return {};
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY"));
  EXPECT_EQ(bytes[6], '\x01');
  EXPECT_EQ(bytes[7], '\x00');
  const size_t header_len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + data_bytes);
  const std::string dict = bytes.substr(10, header_len);
  EXPECT_EQ(dict.back(), '\n');
  return dict;
}

std::string expected_dict(const std::string& body, size_t header_len) {
  std::string dict = body;
  dict.append(header_len - body.size() - 1, ' ');
  return dict + "\n";
}

TEST_F(npy_test, f32_file) {
  const std::vector<float> data{1.0f, -2.5f, 0.0f, 3.25f, 1e-20f, 65504.0f};
  const std::string p = path("sub/a.npy");
  write_npy_f32(p, data.data(), {2, 3});
  const std::string bytes = read_bytes(p);
  const std::string dict = check_header(bytes, data.size() * 4);
  EXPECT_EQ(dict, expected_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                dict.size()));
  ASSERT_EQ(bytes.size(), 10 + dict.size() + data.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + dict.size(), data.data(), data.size() * 4), 0);
  // Explicit little-endian check of the first element, 1.0f = 0x3F800000.
  EXPECT_EQ(bytes.substr(10 + dict.size(), 4), std::string("\x00\x00\x80\x3F", 4));
}

TEST_F(npy_test, f16_file) {
  const std::vector<uint16_t> data{0x3C00, 0xC100, 0x7BFF, 0x0001};
  const std::string p = path("b.npy");
  write_npy_f16(p, data.data(), {4});
  const std::string bytes = read_bytes(p);
  const std::string dict = check_header(bytes, data.size() * 2);
  EXPECT_EQ(dict, expected_dict("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }",
                                dict.size()));
  EXPECT_EQ(bytes.substr(10 + dict.size()), std::string("\x00\x3C\x00\xC1\xFF\x7B\x01\x00", 8));
}

TEST_F(npy_test, higher_rank_and_empty) {
  const std::vector<float> data(2 * 3 * 4 * 5, 0.5f);
  write_npy_f32(path("c.npy"), data.data(), {2, 3, 4, 5});
  std::string dict = check_header(read_bytes(path("c.npy")), data.size() * 4);
  EXPECT_NE(dict.find("'shape': (2, 3, 4, 5), }"), std::string::npos) << dict;

  write_npy_f32(path("d.npy"), nullptr, {0, 3});
  dict = check_header(read_bytes(path("d.npy")), 0);
  EXPECT_NE(dict.find("'shape': (0, 3), }"), std::string::npos) << dict;
}

TEST(npy, unwritable_path_names_it) {
  const float x = 1;
  const std::string p = "/proc/nonexistent/x.npy";
  try {
    write_npy_f32(p, &x, {1});
    FAIL() << "did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

constexpr float inf = std::numeric_limits<float>::infinity();

TEST(npy, bf16_to_float_exact) {
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC020), -2.5f);
  EXPECT_EQ(bf16_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(bf16_to_float(0x8000)));
  EXPECT_EQ(bf16_to_float(0x7F80), inf);
  EXPECT_EQ(bf16_to_float(0xFF80), -inf);
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7FC0)));
  EXPECT_EQ(bf16_to_float(0x3F81), 1.0f + 0x1p-7f);
  EXPECT_EQ(bf16_to_float(0x0001), 0x1p-133f);  // smallest bf16 subnormal
}

TEST(npy, half_to_float_exact) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC100), -2.5f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0x8001), -0x1p-24f);
  EXPECT_EQ(half_to_float(0x03FF), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(half_to_float(0x0400), 0x1p-14f);         // smallest normal
  EXPECT_EQ(half_to_float(0x3C01), 1.0f + 0x1p-10f);
  EXPECT_EQ(half_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x7C00), inf);
  EXPECT_EQ(half_to_float(0xFC00), -inf);
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));  // signalling NaN is still NaN
}

TEST(npy, float_to_bf16_round_to_nearest_even) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.5f), 0xC020);
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(inf), 0x7F80);
  EXPECT_EQ(float_to_bf16(-inf), 0xFF80);
  // bf16 keeps 7 mantissa bits: the spacing above 1.0 is 2^-7.
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);             // tie, 1.0 is even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);         // tie, 1+2^-6 is even
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);  // above the tie
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f - 0x1p-20f), 0x3F80);  // below the tie
  EXPECT_EQ(float_to_bf16(-(1.0f + 3 * 0x1p-8f)), 0xBF82);
  // The largest float is past the halfway point to 2^128, so it becomes infinity.
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload is only in the low 16 bits must not truncate to infinity.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7F800001u)))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0xFF800001u)))));
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every finite bf16 survives the round trip
    const auto bits = static_cast<uint16_t>(b);
    if ((bits & 0x7F80) == 0x7F80) continue;
    ASSERT_EQ(float_to_bf16(bf16_to_float(bits)), bits) << b;
  }
}

TEST(npy, float_to_half_round_to_nearest_even) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.5f), 0xC100);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(inf), 0x7C00);
  EXPECT_EQ(float_to_half(-inf), 0xFC00);
  // half keeps 10 mantissa bits: the spacing above 1.0 is 2^-10.
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3C00);      // tie, 1.0 is even
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie, 1+2^-9 is even
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  // Overflow: 65520 is halfway between 65504 and 65536 and goes to the even side, infinity.
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  // Subnormals, in units of 2^-24.
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_half(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);             // tie, 0 is even
  EXPECT_EQ(float_to_half(0x1p-25f + 0x1p-40f), 0x0001);  // just above the tie
  EXPECT_EQ(float_to_half(3 * 0x1p-25f), 0x0002);         // tie, 2 is even
  EXPECT_EQ(float_to_half(5 * 0x1p-25f), 0x0002);         // tie, 2 is even
  EXPECT_EQ(float_to_half(0x1p-26f), 0x0000);
  EXPECT_EQ(float_to_half(1e-30f), 0x0000);
  EXPECT_EQ(float_to_half(0x1p-14f - 0x1p-25f), 0x0400);  // tie between 1023 and 1024 ulps
  EXPECT_EQ(float_to_half(0x1p-14f), 0x0400);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::bit_cast<float>(0x7F800001u)))));
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every finite half survives the round trip
    const auto bits = static_cast<uint16_t>(b);
    if ((bits & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(float_to_half(half_to_float(bits)), bits) << b;
  }
}

}  // namespace
}  // namespace attn
