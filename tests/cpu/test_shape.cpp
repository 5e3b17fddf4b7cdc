#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/problem.hpp"
#include "invalid_input_message.hpp"

namespace {

using attn::testing::invalid_input_message;

attn::problem valid_shape() {
  attn::problem s;
  s.batch = 2;
  s.heads = 8;
  s.kv_heads = 2;
  s.q_len = 128;
  s.kv_len = 256;
  s.head_dim = 64;
  return s;
}

}  // namespace

TEST(ParseShape, ParsesFourFields) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  EXPECT_EQ(s.batch, 4);
  EXPECT_EQ(s.heads, 32);
  EXPECT_EQ(s.kv_heads, 32);
  EXPECT_EQ(s.q_len, 4096);
  EXPECT_EQ(s.kv_len, 4096);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_FALSE(s.causal);
  EXPECT_EQ(s.dtype, attn::dtype::bf16);
  EXPECT_EQ(s.layout, attn::layout::bhsd);
}

TEST(ParseShape, AcceptsSmallestAndLargestHeadDim) {
  EXPECT_EQ(attn::parse_shape("1,1,1,32").head_dim, 32);
  EXPECT_EQ(attn::parse_shape("1,1,1,256").head_dim, 256);
}

TEST(ParseShape, NamesNonNumericField) {
  EXPECT_EQ(invalid_input_message([] { attn::parse_shape("4,32,x,128"); }),
            "invalid --shape '4,32,x,128': 'x' is not a positive integer");
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("a,b,c,d"); }).find("'a'"),
            std::string::npos);
}

TEST(ParseShape, RejectsZeroAndNegative) {
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("0,1,2,64"); })
                .find("'0' is not a positive integer"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("-1,32,4096,128"); })
                .find("'-1' is not a positive integer"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4,32,4096,-128"); }).find("'-128'"),
            std::string::npos);
}

TEST(ParseShape, RejectsWrongFieldCount) {
  std::string three = invalid_input_message([] { attn::parse_shape("4,32,4096"); });
  EXPECT_NE(three.find("'4,32,4096'"), std::string::npos) << three;
  EXPECT_NE(three.find("got 3"), std::string::npos) << three;
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4,32,4096,128,1"); }).find("got 5"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape(""); }).find("got 1"),
            std::string::npos);
}

TEST(ParseShape, RejectsTrailingJunkAndEmptyFields) {
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4,32,4096,128x"); }).find("'128x'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4,,4096,128"); })
                .find("'' is not a positive integer"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4,32,4096,128,"); }).find("got 5"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape(" 4,32,4096,128"); }).find("' 4'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("+4,32,4096,128"); }).find("'+4'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("4.0,32,4096,128"); }).find("'4.0'"),
            std::string::npos);
}

TEST(ParseShape, RejectsOverflow) {
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("99999999999999999999,1,1,64"); })
                .find("'99999999999999999999' is not a positive integer"),
            std::string::npos);
  // Each field fits, but the score matrix's byte count would not.
  EXPECT_NE(invalid_input_message([] { attn::parse_shape("1000000,1000000,1000000,64"); })
                .find("too large"),
            std::string::npos);
}

TEST(ParseShape, RejectsBadHeadDimThroughValidate) {
  EXPECT_EQ(invalid_input_message([] { attn::parse_shape("4,32,4096,300"); }),
            "invalid --shape '4,32,4096,300': head dim 300 is not in [32, 256]");
}

TEST(Validate, AcceptsValidShape) { EXPECT_NO_THROW(attn::validate(valid_shape())); }

TEST(Validate, HeadDimMustBeInRange) {
  attn::problem s = valid_shape();
  s.head_dim = 31;
  EXPECT_EQ(invalid_input_message([&] { attn::validate(s); }), "head dim 31 is not in [32, 256]");
  s.head_dim = 257;
  EXPECT_EQ(invalid_input_message([&] { attn::validate(s); }), "head dim 257 is not in [32, 256]");
  // Every head dim in range: multiples of 8 (40, 72) and the others (33, 59, 111: fa2 loads them
  // by element).
  for (int64_t d : {33, 40, 59, 72, 88, 100, 104, 111, 120, 200, 248, 255}) {
    s.head_dim = d;
    EXPECT_NO_THROW(attn::validate(s)) << d;
  }
  s.head_dim = 16;
  EXPECT_NE(invalid_input_message([&] { attn::validate(s); }).find("head dim 16 "),
            std::string::npos);
  s.head_dim = 272;
  EXPECT_NE(invalid_input_message([&] { attn::validate(s); }).find("head dim 272 "),
            std::string::npos);
  s.head_dim = 32;
  EXPECT_NO_THROW(attn::validate(s));
  s.head_dim = 256;
  EXPECT_NO_THROW(attn::validate(s));
}

TEST(Validate, HeadsMustBeDivisibleByKvHeads) {
  attn::problem s = valid_shape();
  s.heads = 32;
  s.kv_heads = 5;
  EXPECT_EQ(invalid_input_message([&] { attn::validate(s); }),
            "heads 32 not divisible by kv-heads 5");
  s.kv_heads = 64;  // more kv heads than query heads
  EXPECT_EQ(invalid_input_message([&] { attn::validate(s); }),
            "heads 32 not divisible by kv-heads 64");
  s.kv_heads = 1;  // MQA
  EXPECT_NO_THROW(attn::validate(s));
}

TEST(Validate, SizesMustBePositive) {
  attn::problem s = valid_shape();
  s.kv_len = 0;
  EXPECT_EQ(invalid_input_message([&] { attn::validate(s); }),
            "kv-len 0 is not a positive integer");
  s = valid_shape();
  s.batch = -3;
  EXPECT_NE(invalid_input_message([&] { attn::validate(s); }).find("batch -3"),
            std::string::npos);
  s = valid_shape();
  s.kv_heads = 0;
  EXPECT_NE(invalid_input_message([&] { attn::validate(s); }).find("kv-heads 0"),
            std::string::npos);
  s = valid_shape();
  s.q_len = 0;
  EXPECT_NE(invalid_input_message([&] { attn::validate(s); }).find("q-len 0"),
            std::string::npos);
}

TEST(Dtype, ParseAndPrint) {
  EXPECT_EQ(attn::parse_dtype("bf16"), attn::dtype::bf16);
  EXPECT_EQ(attn::parse_dtype("fp16"), attn::dtype::fp16);
  EXPECT_EQ(attn::to_string(attn::dtype::bf16), "bf16");
  EXPECT_EQ(attn::to_string(attn::dtype::fp16), "fp16");
  EXPECT_EQ(attn::element_size(attn::dtype::bf16), 2);
  EXPECT_EQ(attn::element_size(attn::dtype::fp16), 2);
}

TEST(Dtype, RejectsUnknownNamingIt) {
  EXPECT_NE(invalid_input_message([] { attn::parse_dtype("fp32"); }).find("'fp32'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_dtype("BF16"); }).find("'BF16'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_dtype(""); }).find("''"), std::string::npos);
}

TEST(Layout, ParseAndPrint) {
  EXPECT_EQ(attn::parse_layout("bhsd"), attn::layout::bhsd);
  EXPECT_EQ(attn::parse_layout("bshd"), attn::layout::bshd);
  EXPECT_EQ(attn::to_string(attn::layout::bhsd), "bhsd");
  EXPECT_EQ(attn::to_string(attn::layout::bshd), "bshd");
}

TEST(Layout, RejectsUnknownNamingIt) {
  EXPECT_NE(invalid_input_message([] { attn::parse_layout("bsdh"); }).find("'bsdh'"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([] { attn::parse_layout("bhsd "); }).find("'bhsd '"),
            std::string::npos);
}

TEST(Flops, SelfAttention) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  EXPECT_EQ(attn::attention_flops(s), 4.0 * 4 * 32 * 4096 * 4096 * 128);
  EXPECT_EQ(attn::attention_flops(s), 1099511627776.0);  // 2^40
}

TEST(Flops, CausalHalves) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  s.causal = true;
  EXPECT_EQ(attn::attention_flops(s), 549755813888.0);
}

TEST(Flops, CrossAttentionUsesBothLengths) {
  attn::problem s = valid_shape();  // B2 H8/2 N128x256 D64
  EXPECT_EQ(attn::attention_flops(s), 4.0 * 2 * 8 * 128 * 256 * 64);
  s.kv_heads = 8;  // kv heads do not change the math done
  EXPECT_EQ(attn::attention_flops(s), 4.0 * 2 * 8 * 128 * 256 * 64);
}

TEST(Flops, Tflops) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  EXPECT_DOUBLE_EQ(attn::tflops(s, 1.0), 1099.511627776);
  EXPECT_DOUBLE_EQ(attn::tflops(s, 2.0), 549.755813888);
  EXPECT_THROW(attn::tflops(s, 0.0), std::invalid_argument);
  EXPECT_THROW(attn::tflops(s, -1.0), std::invalid_argument);
}

TEST(Bytes, Formulas) {
  attn::problem s;
  s.batch = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.q_len = 8;
  s.kv_len = 24;
  s.head_dim = 32;
  EXPECT_EQ(attn::q_bytes(s), 2 * 4 * 8 * 32 * 2);
  EXPECT_EQ(attn::kv_bytes(s), 2 * 2 * 24 * 32 * 2);
  EXPECT_EQ(attn::materialized_extra_bytes(s), 2 * 4 * 8 * 24 * 6);
  EXPECT_EQ(attn::lse_bytes(s), 2 * 4 * 8 * 4);
  s.dtype = attn::dtype::fp16;
  EXPECT_EQ(attn::q_bytes(s), 4096);
  EXPECT_EQ(attn::kv_bytes(s), 6144);
  EXPECT_EQ(attn::materialized_extra_bytes(s), 9216);
  EXPECT_EQ(attn::lse_bytes(s), 256);
  // Q read and O written, K and V read at their kv_heads heads, the LSE written.
  EXPECT_EQ(attn::moved_bytes(s), 2 * 4096 + 2 * 6144 + 256);
}

TEST(Bytes, LargeShapeDoesNotOverflow) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  EXPECT_EQ(attn::materialized_extra_bytes(s), int64_t{4} * 32 * 4096 * 4096 * 6);
  EXPECT_EQ(attn::materialized_extra_bytes(s), 12884901888);
  EXPECT_EQ(attn::q_bytes(s), int64_t{4} * 32 * 4096 * 128 * 2);
  EXPECT_EQ(attn::lse_bytes(s), int64_t{4} * 32 * 4096 * 4);
  EXPECT_EQ(attn::moved_bytes(s), int64_t{4} * 4 * 32 * 4096 * 128 * 2 + int64_t{4} * 32 * 4096 * 4);
}

TEST(ElementOffset, Bhsd) {
  // [B, H=3, N=5, D=4]: (1, 2, 3) is after 1*3 + 2 whole heads and 3 rows.
  EXPECT_EQ(attn::element_offset(attn::layout::bhsd, 3, 5, 4, 1, 2, 3), ((1 * 3 + 2) * 5 + 3) * 4);
  EXPECT_EQ(attn::element_offset(attn::layout::bhsd, 3, 5, 4, 1, 2, 3), 112);
  EXPECT_EQ(attn::element_offset(attn::layout::bhsd, 3, 5, 4, 0, 0, 1), 4);
  EXPECT_EQ(attn::element_offset(attn::layout::bhsd, 3, 5, 4, 0, 1, 0), 20);
}

TEST(ElementOffset, Bshd) {
  // [B, N=5, H=3, D=4]: (1, 2, 3) is after 1*5 + 3 whole rows of heads and 2 heads.
  EXPECT_EQ(attn::element_offset(attn::layout::bshd, 3, 5, 4, 1, 2, 3), ((1 * 5 + 3) * 3 + 2) * 4);
  EXPECT_EQ(attn::element_offset(attn::layout::bshd, 3, 5, 4, 1, 2, 3), 104);
  EXPECT_EQ(attn::element_offset(attn::layout::bshd, 3, 5, 4, 0, 0, 1), 12);
  EXPECT_EQ(attn::element_offset(attn::layout::bshd, 3, 5, 4, 0, 1, 0), 4);
}

TEST(ElementOffset, EveryRowHasItsOwnSlot) {
  for (attn::layout l : {attn::layout::bhsd, attn::layout::bshd}) {
    std::set<int64_t> offsets;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t i = 0; i < 5; ++i) {
          int64_t at = attn::element_offset(l, 3, 5, 4, b, h, i);
          EXPECT_EQ(at % 4, 0);
          offsets.insert(at);
        }
    ASSERT_EQ(offsets.size(), 30u) << attn::to_string(l);
    EXPECT_EQ(*offsets.begin(), 0);
    EXPECT_EQ(*offsets.rbegin(), 29 * 4);
  }
}

TEST(Describe, PlainShape) {
  attn::problem s = attn::parse_shape("4,32,4096,128");
  EXPECT_EQ(attn::describe(s), "B4 H32 N4096 D128 bf16 bhsd");
  s.causal = true;
  EXPECT_EQ(attn::describe(s), "B4 H32 N4096 D128 bf16 bhsd causal");
}

TEST(Describe, ShowsKvHeadsAndKvLenOnlyWhenTheyDiffer) {
  attn::problem s = valid_shape();
  s.dtype = attn::dtype::fp16;
  s.layout = attn::layout::bshd;
  EXPECT_EQ(attn::describe(s), "B2 H8/2 N128x256 D64 fp16 bshd");
  s.kv_heads = 8;
  EXPECT_EQ(attn::describe(s), "B2 H8 N128x256 D64 fp16 bshd");
  s.kv_len = 128;
  s.kv_heads = 1;
  EXPECT_EQ(attn::describe(s), "B2 H8/1 N128 D64 fp16 bshd");
}
