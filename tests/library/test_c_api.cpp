// The C API through libattn_tune.so, without a device: argument checks and their messages, the
// table lookup (tuned shape, bucket, fallback, another device) and bundles read back.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "attn_tune/attn_tune.hpp"

namespace {

const std::string data = std::string(ATTN_TUNE_SOURCE_DIR) + "/tests/data/";

// Aligned stand-ins: the checks look at pointers, never behind them.
void* fake(uintptr_t address) { return reinterpret_cast<void*>(address); }
struct tensors {
  void* q = fake(0x10000);
  void* k = fake(0x20000);
  void* v = fake(0x30000);
  void* o = fake(0x40000);
  float* lse = static_cast<float*>(fake(0x50000));
};

attn_tune_status check(const attn_tune_problem& p, const tensors& t = {}) {
  return attn_tune_check(t.q, t.k, t.v, t.o, t.lse, &p);
}

std::string error() { return attn_tune_last_error(); }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(LibraryArguments, AValidProblemPasses) {
  EXPECT_EQ(check(attn_tune::make_problem(2, 8, 2, 256, 512, 128, ATTN_TUNE_FP16, true, ATTN_TUNE_BSHD)), ATTN_TUNE_OK);
  EXPECT_EQ(error(), "");
}

// A KV cache (API version 3): the page table and its page size come together, page sizes are
// checked, a problem of version 2's size still reads (without the cache fields), and the paged
// K/V's strides are its page's.
TEST(LibraryArguments, AKvCacheIsChecked) {
  auto p = attn_tune::make_problem(4, 32, 8, 1, 8192, 128);
  const int32_t* on_device = static_cast<const int32_t*>(fake(0x60000));
  p.cache_seqlens = on_device;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.block_table = on_device;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("with page_size 0: a paged cache needs both"), std::string::npos) << error();
  p.page_size = 24;
  p.num_pages = 4 * 342;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("page size 24"), std::string::npos) << error();
  p.page_size = 16;
  p.num_pages = 4 * 512;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.num_pages = 0;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("page count 0"), std::string::npos) << error();
  p.num_pages = 4 * 512;
  p.kv_strides[0] = 16 * 8 * 128, p.kv_strides[1] = 8, p.kv_strides[2] = 8 * 128;  // heads overlap
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("kv head stride 8"), std::string::npos) << error();
  auto old = attn_tune::make_problem(4, 32, 8, 1, 8192, 128);
  old.struct_size = offsetof(attn_tune_problem, cache_seqlens);  // a caller built against version 2
  old.cache_seqlens = on_device;  // past its struct_size: never read
  EXPECT_EQ(check(old), ATTN_TUNE_OK) << error();
  old.struct_size -= 8;
  EXPECT_EQ(check(old), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
}

TEST(LibraryArguments, AWindowAndSoftcapAreChecked) {
  auto p = attn_tune::make_problem(1, 8, 8, 512, 512, 128);
  p.window = 1, p.window_left = 128, p.window_right = -1, p.softcap = 50;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.window_left = -3;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("window left -3"), std::string::npos) << error();
  p.window_left = 128, p.causal = 1, p.window_right = 4;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("window_right 4 with causal"), std::string::npos) << error();
  p.window_right = 0;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.window = 2;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("window 2 is not 0 or 1"), std::string::npos) << error();
  p.window = 0, p.softcap = -1;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("softcap -1"), std::string::npos) << error();
  auto old = attn_tune::make_problem(1, 8, 8, 512, 512, 128);
  old.struct_size = offsetof(attn_tune_problem, window);  // a caller built against version 3
  old.softcap = -1;  // past its struct_size: never read
  EXPECT_EQ(check(old), ATTN_TUNE_OK) << error();
}

// V's own head dim (API version 5): dv in [32, 256] or 0, V's and O's strides checked as K's and
// Q's are (contiguous with rows of dv when left at 0), overlaps refused, a dv equal to the head dim
// taken as 0, and V's and O's strides refused where V and O share K's and Q's.
TEST(LibraryArguments, AValueHeadDimIsChecked) {
    auto p = attn_tune::make_problem(2, 8, 2, 512, 512, 192, ATTN_TUNE_BF16, true);
  p.head_dim_v = 128;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.head_dim_v = 300;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("value head dim (dv) 300"), std::string::npos) << error();
  p.head_dim_v = 192;  // = d: taken as 0
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.head_dim_v = 128;
  p.v_strides[0] = 2 * 512 * 128, p.v_strides[1] = 512 * 128, p.v_strides[2] = 128;
  p.o_strides[0] = 8 * 512 * 128, p.o_strides[1] = 512 * 128, p.o_strides[2] = 128;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.o_strides[2] = 100;  // rows of 128 elements 100 apart
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("o row stride 100"), std::string::npos) << error();
  p.o_strides[2] = 128;
  p.v_strides[1] = 64;  // heads of 512 rows 64 elements apart
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("v "), std::string::npos) << error();
  auto same = attn_tune::make_problem(2, 8, 2, 512, 512, 128);
  same.v_strides[0] = 1, same.v_strides[1] = 1, same.v_strides[2] = 1;
  EXPECT_EQ(check(same), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("with dv = d they must be equal"), std::string::npos) << error();
  auto old = attn_tune::make_problem(1, 8, 8, 512, 512, 128);
  old.struct_size = offsetof(attn_tune_problem, head_dim_v);  // a caller built against version 4
  old.head_dim_v = 300;  // past its struct_size: never read
  EXPECT_EQ(check(old), ATTN_TUNE_OK) << error();
}

// A packed variable-length batch (API version 6, flash_attn_varlen_func): cu_seqlens_q and
// cu_seqlens_k come together with the rows of Q and K (total_q, total_k), at most batch x the
// longest; not with a KV cache; the batch strides are 0, and strides left at 0 are contiguous
// over the total rows (in BHSD too, where the head stride is total x D); a problem of version
// 5's size still reads (not packed).
TEST(LibraryArguments, APackedBatchIsChecked) {
  static_assert(sizeof(attn_tune_problem) == 264, "the Python package's ctypes struct must match");
  const int32_t* cu_q = static_cast<const int32_t*>(fake(0x60000));
  const int32_t* cu_k = static_cast<const int32_t*>(fake(0x61000));
  // B 3 of at most 300 queries and 700 keys each, 8 heads over 2: [517, 8, 64] and [900, 2, 64].
  auto p = attn_tune::make_problem(3, 8, 2, 300, 700, 64, ATTN_TUNE_BF16, true, ATTN_TUNE_BSHD);
  p.cu_seqlens_q = cu_q, p.cu_seqlens_k = cu_k, p.total_q = 517, p.total_k = 900;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.layout = ATTN_TUNE_BHSD;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.q_strides[0] = 0, p.q_strides[1] = 517 * 64, p.q_strides[2] = 64;  // [H, total_q, D], as the library makes it
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.q_strides[1] = 300 * 64;  // heads 300 rows apart: the bound's, not the total's; they overlap
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "q head stride 19200 is less than the 33088 elements of each row below it: the tensor's heads "
                     "would overlap");
  p.q_strides[0] = 8 * 517 * 64, p.q_strides[1] = 517 * 64;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("q batch stride 264704 of a packed batch (seqlens) is not 0"), std::string::npos) << error();
  p.q_strides[0] = p.q_strides[1] = p.q_strides[2] = 0;
  // Q's strides left at 0 are [H, total_q, D]'s: O's, given, must equal them (dv = d), and do.
  p.o_strides[0] = 0, p.o_strides[1] = 517 * 64, p.o_strides[2] = 64;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p.o_strides[1] = 3 * 300 * 64;  // the bound's rows
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "o strides 0, 57600, 64 differ from q's 0, 33088, 64: with dv = d they must be equal");
  p.o_strides[0] = p.o_strides[1] = p.o_strides[2] = 0;

  auto without = [&](auto change) {
    auto bad = p;
    change(bad);
    return check(bad);
  };
  EXPECT_EQ(without([](attn_tune_problem& b) { b.cu_seqlens_k = nullptr; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("cu_seqlens_q without cu_seqlens_k"), std::string::npos) << error();
  EXPECT_EQ(without([](attn_tune_problem& b) { b.cu_seqlens_q = nullptr; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("cu_seqlens_k without cu_seqlens_q"), std::string::npos) << error();
  EXPECT_EQ(without([](attn_tune_problem& b) { b.cu_seqlens_q = b.cu_seqlens_k = nullptr; }),
            ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("total_q 517 and total_k 900 without cu_seqlens_q"), std::string::npos) << error();
  EXPECT_EQ(without([](attn_tune_problem& b) { b.total_k = 0; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "total_k 0 with cu_seqlens_q: a packed batch's rows must be > 0");
  EXPECT_EQ(without([](attn_tune_problem& b) { b.total_q = -1; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "total_q -1 with cu_seqlens_q: a packed batch's rows must be > 0");
  EXPECT_EQ(without([](attn_tune_problem& b) { b.total_q = 901; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "total_q 901 exceeds batch 3 x q_len (max_seqlen_q) 300: no sequence may be longer than that");
  EXPECT_EQ(without([](attn_tune_problem& b) { b.total_q = 900; }), ATTN_TUNE_OK) << error();  // all of 300
  EXPECT_EQ(without([](attn_tune_problem& b) { b.total_k = 2101; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("total_k 2101 exceeds batch 3 x kv_len (max_seqlen_k) 700"), std::string::npos) << error();
  EXPECT_EQ(without([&](attn_tune_problem& b) { b.cache_seqlens = cu_q; }), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("cu_seqlens_q with cache_seqlens"), std::string::npos) << error();
  EXPECT_EQ(without([&](attn_tune_problem& b) { b.cu_seqlens_k = cu_k + 1; }), ATTN_TUNE_OK) << error();
  EXPECT_EQ(without([&](attn_tune_problem& b) {
              b.cu_seqlens_k = reinterpret_cast<const int32_t*>(reinterpret_cast<uintptr_t>(cu_k) + 2);
            }),
            ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "cu_seqlens_k = 0x61002 is not 4-byte aligned");
  auto self = attn_tune::make_problem(2, 4, 4, 64, 64, 64);  // self-attention: one offsets array for both
  self.cu_seqlens_q = self.cu_seqlens_k = cu_q, self.total_q = self.total_k = 100;
  EXPECT_EQ(check(self), ATTN_TUNE_OK) << error();

  // V and O with their own head dim: their strides over the total rows too.
  auto dv = p;
  dv.head_dim = 192, dv.head_dim_v = 128;
  EXPECT_EQ(check(dv), ATTN_TUNE_OK) << error();
  dv.o_strides[0] = 0, dv.o_strides[1] = 517 * 128, dv.o_strides[2] = 128;
  EXPECT_EQ(check(dv), ATTN_TUNE_OK) << error();
  dv.o_strides[1] = 517 * 96;
  EXPECT_EQ(check(dv), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("o head stride 49632 is less than"), std::string::npos) << error();

  auto old = attn_tune::make_problem(1, 8, 8, 512, 512, 128);
  old.struct_size = offsetof(attn_tune_problem, cu_seqlens_q);  // a caller built against version 5
  old.cu_seqlens_q = cu_q, old.total_q = -5;  // past its struct_size: never read
  EXPECT_EQ(check(old), ATTN_TUNE_OK) << error();
}

TEST(LibraryArguments, NullPointersAreNamed) {
  const auto p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  for (int which = 0; which < 5; ++which) {
    tensors t;
    void** slots[] = {&t.q, &t.k, &t.v, &t.o, reinterpret_cast<void**>(&t.lse)};
    *slots[which] = nullptr;
    EXPECT_EQ(check(p, t), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
    const char* names[] = {"q", "k", "v", "o", "lse"};
    EXPECT_EQ(error(), std::string(names[which]) + " is NULL");
  }
  EXPECT_EQ(attn_tune_check(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "problem is NULL");
}

TEST(LibraryArguments, MisalignedPointerIsNamed) {
  tensors t;
  t.k = fake(0x20008);
  EXPECT_EQ(check(attn_tune::make_problem(1, 1, 1, 64, 64, 64), t), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "k = 0x20008 is not 16-byte aligned");
}

TEST(LibraryArguments, BadSizesDtypeLayoutAndStrides) {
  auto p = attn_tune::make_problem(1, 1, 1, 64, 64, 300);
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("head dim 300"), std::string::npos) << error();
  p = attn_tune::make_problem(1, 6, 4, 64, 64, 64);
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("kv-heads 4"), std::string::npos) << error();
  p = attn_tune::make_problem(0, 1, 1, 64, 64, 64);
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("0"), std::string::npos) << error();
  p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  p.dtype = 7;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "unknown dtype 7 (ATTN_TUNE_BF16 = 0, ATTN_TUNE_FP16 = 1)");
  p.dtype = ATTN_TUNE_BF16;
  p.layout = 3;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "unknown layout 3 (ATTN_TUNE_BHSD = 0, ATTN_TUNE_BSHD = 1)");
  p.layout = ATTN_TUNE_BHSD;
  p.q_strides[0] = 64 * 64, p.q_strides[1] = 64 * 64, p.q_strides[2] = 68;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "q row stride 68 is not a positive multiple of 8 elements (16 bytes)");
  p.q_strides[2] = 32;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "q row stride 32 is less than the head dim 64: rows would overlap");
  p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  p.softmax_scale = -1;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("softmax_scale -1"), std::string::npos) << error();
  p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  p.struct_size = 8;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("problem->struct_size 8"), std::string::npos) << error();
}

// Issue 20, item 4: K's and V's strides are checked like Q's; causal is 0 or 1; sizes and
// strides whose products pass 2^31 are handled (64-bit offsets), and ones past 2^63 refused.
TEST(LibraryArguments, KvStridesAreCheckedLikeQs) {
  auto p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  p.kv_strides[0] = 64 * 64, p.kv_strides[1] = 64 * 64, p.kv_strides[2] = 68;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kv row stride 68 is not a positive multiple of 8 elements (16 bytes)");
  p.kv_strides[2] = 32;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kv row stride 32 is less than the head dim 64: rows would overlap");
  p.kv_strides[2] = 64, p.kv_strides[1] = 0;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kv head stride 0 is not a positive multiple of 8 elements (16 bytes)");
  p.kv_strides[1] = 64 * 64, p.kv_strides[0] = -8;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kv batch stride -8 is not a positive multiple of 8 elements (16 bytes)");
  p.kv_strides[0] = 64 * 64 + 4;  // fp16/bf16: 8 elements per 16 bytes
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kv batch stride 4100 is not a positive multiple of 8 elements (16 bytes)");
  p.kv_strides[0] = 64 * 64 + 8;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  // Q's head stride alone wrong: named as q's.
  p.q_strides[0] = 64 * 64, p.q_strides[1] = 12, p.q_strides[2] = 64;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "q head stride 12 is not a positive multiple of 8 elements (16 bytes)");
}

// Issue 21, item 9: heads or batches that overlap are refused like overlapping rows.
TEST(LibraryArguments, OverlappingHeadsAndBatchesAreRefused) {
  auto p = attn_tune::make_problem(2, 4, 4, 64, 64, 64);  // bhsd: batch 16384, head 4096, row 64
  p.q_strides[0] = 4 * 64 * 64, p.q_strides[1] = 8, p.q_strides[2] = 4 * 64;  // heads 8 apart, rows of 64
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "q head stride 8 is less than the 64 elements of each row's head dim below it: the tensor's "
                     "heads would overlap");
  p.q_strides[0] = 64 * 64, p.q_strides[1] = 64 * 64, p.q_strides[2] = 64;  // batch stride = head stride
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("q batch stride 4096 is less than"), std::string::npos) << error();
  p.q_strides[0] = p.q_strides[1] = p.q_strides[2] = 0;
  p.kv_strides[0] = 4 * 64 * 64, p.kv_strides[1] = 32, p.kv_strides[2] = 4 * 64;  // bshd-like, heads overlap
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("kv head stride 32"), std::string::npos) << error();
  p.kv_strides[1] = 64;  // bshd: [B, N, H, D], heads 64 apart inside a row of 4 * 64
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  p.q_strides[0] = 8, p.q_strides[1] = 8, p.q_strides[2] = 64;  // one batch and one head: any stride
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
}

TEST(LibraryArguments, CausalOtherThanZeroOrOneIsRefused) {
  auto p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  for (int causal : {2, -1, 255}) {
    p.causal = causal;
    EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT) << causal;
    EXPECT_EQ(error(), "causal " + std::to_string(causal) + " is not 0 or 1");
  }
  for (int causal : {0, 1}) {
    p.causal = causal;
    EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  }
}

TEST(LibraryArguments, OffsetsPast32BitsAreHandledAndPast63BitsRefused) {
  // 2^31 elements and more in one tensor (64-bit strides): accepted.
  auto p = attn_tune::make_problem(4, 32, 32, 32768, 32768, 128);
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  p = attn_tune::make_problem(2, 1, 1, 64, 64, 64);
  p.q_strides[0] = int64_t{1} << 33, p.q_strides[1] = 64 * 64, p.q_strides[2] = 64;
  EXPECT_EQ(check(p), ATTN_TUNE_OK) << error();
  // A batch stride whose product with the batch passes 2^63: refused, naming the tensor.
  p = attn_tune::make_problem(4, 1, 1, 64, 64, 64);
  p.kv_strides[0] = int64_t{1} << 62, p.kv_strides[1] = 64 * 64, p.kv_strides[2] = 64;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("kv strides"), std::string::npos) << error();
  EXPECT_NE(error().find("64 bits"), std::string::npos) << error();
  p = attn_tune::make_problem(1, 4, 4, 64, 64, 64);
  p.q_strides[0] = 64 * 64 * 4, p.q_strides[1] = int64_t{1} << 62, p.q_strides[2] = 64;
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("q strides"), std::string::npos) << error();
  // Lengths past 32 bits are refused (the kernels index rows with int).
  p = attn_tune::make_problem(1, 1, 1, int64_t{1} << 31, 64, 64);
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("32 bits"), std::string::npos) << error();
  p = attn_tune::make_problem(1, 1, 1, 64, int64_t{1} << 31, 64);
  EXPECT_EQ(check(p), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("32 bits"), std::string::npos) << error();
}

TEST(LibraryArguments, NoContextNoLaunch) {
  const auto p = attn_tune::make_problem(1, 1, 1, 64, 64, 64);
  const tensors t;
  EXPECT_EQ(attn_tune_forward(nullptr, t.q, t.k, t.v, t.o, t.lse, &p, nullptr, nullptr),
            ATTN_TUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "ctx is NULL");
  EXPECT_EQ(attn_tune_context_create(nullptr, nullptr), ATTN_TUNE_ERROR_INVALID_ARGUMENT);
}

TEST(LibraryArguments, StatusNamesAndVersion) {
  EXPECT_STREQ(attn_tune_status_name(ATTN_TUNE_ERROR_BUNDLE), "bundle error");
  EXPECT_EQ(attn_tune_api_version(), ATTN_TUNE_API_VERSION);
  EXPECT_STRNE(attn_tune_version_string(), "");
}

TEST(LibraryContext, WithoutADeviceSaysSo) {
  attn_tune_context_options o{};
  o.struct_size = sizeof o;
  attn_tune_context* ctx = nullptr;
  const attn_tune_status s = attn_tune_context_create(&o, &ctx);
  if (s == ATTN_TUNE_OK) {
    attn_tune_context_destroy(ctx);
    GTEST_SKIP() << "this machine has a CUDA device";
  }
  EXPECT_EQ(s, ATTN_TUNE_ERROR_NO_DEVICE);
  EXPECT_NE(error().find("no CUDA device"), std::string::npos) << error();
  EXPECT_EQ(ctx, nullptr);
}

// --- the table ---------------------------------------------------------------------------

attn_tune::choice lookup(const std::string& table, const attn_tune::problem& p, const std::string& device = "NVIDIA H200",
                         int major = 9, int minor = 0, int sms = 132) {
  return attn_tune::table(table).lookup(device, major, minor, sms, p);
}

TEST(LibraryTable, ExactTunedShapeFromAResultsCsv) {
  const auto c = lookup(data + "export_fixture.csv", attn_tune::make_problem(4, 32, 32, 4096, 4096, 128));
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_TUNED);
  EXPECT_STREQ(c.family, "fa2");
  EXPECT_STREQ(c.config, "m256_n64_w8_s2");
}

TEST(LibraryTable, BucketForAShapeNotTuned) {
  // B and H differ, N_q 3000 is in the (2048, 4096] bucket of D=128.
  for (const char* table : {"export_fixture.csv", "library_export.csv"}) {
    const auto c = lookup(data + table, attn_tune::make_problem(1, 8, 8, 3000, 3000, 128));
    EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET) << table;
    EXPECT_STREQ(c.config, "m256_n64_w8_s2") << table;
  }
}

TEST(LibraryTable, JsonExportReadsLikeTheCsv) {
  const std::string json = testing::TempDir() + "library_export.json";
  std::ofstream(json) << R"({
  "schema": 1,
  "entries": [
    {"device": "NVIDIA H200", "cc": "9.0", "sm_count": 132, "dtype": "bf16", "head_dim": 64, "causal": true,
     "seq_min_exclusive": 512, "seq_max": 1024, "config": {"family": "fa2", "block_m": 64, "block_n": 64,
     "warps": 4, "stages": 2, "knob": 0}, "tflops": 199.7, "tuned_shapes": 1}
  ]
})";
  const auto c = lookup(json, attn_tune::make_problem(2, 4, 4, 1024, 1024, 64, ATTN_TUNE_BF16, true));
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m64_n64_w4_s2");
}

TEST(LibraryTable, FallbackOutsideTheBuckets) {
  auto c = lookup(data + "library_export.csv", attn_tune::make_problem(1, 8, 8, 100, 100, 128));
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_FALLBACK);
  EXPECT_STREQ(c.config, "m128_n64_w4_s2");
  c = lookup(data + "library_export.csv", attn_tune::make_problem(1, 8, 8, 100, 100, 256));
  EXPECT_STREQ(c.config, "m64_n64_w4_s1");
}

// A packed batch (cu_seqlens_q) is looked up by its longest sequence (q_len): the bucket of N_q
// 500 here. (An exact tuned shape of a packed batch serving it: tests/cpu/test_library.cpp.)
TEST(LibraryTable, APackedBatchIsLookedUpByItsLongestSequence) {
  const std::string table = testing::TempDir() + "packed_bucket.csv";
  std::ofstream(table) << "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,"
                          "warps,stages,knob,tflops,tuned_shapes\n"
                          "\"NVIDIA H200\",9.0,132,bf16,128,0,256,512,fa2,64,64,4,2,0,1,1\n";
  auto p = attn_tune::make_problem(4, 8, 8, 500, 500, 128, ATTN_TUNE_BF16, false, ATTN_TUNE_BSHD);
  p.cu_seqlens_q = p.cu_seqlens_k = static_cast<const int32_t*>(fake(0x60000));
  p.total_q = p.total_k = 1200;
  const auto c = lookup(table, p);
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m64_n64_w4_s2");
}

TEST(LibraryTable, AnotherDeviceIsRefusedByName) {
  attn_tune_table* t = nullptr;
  ASSERT_EQ(attn_tune_table_load((data + "library_export.csv").c_str(), &t), ATTN_TUNE_OK);
  attn_tune_choice c{};
  c.struct_size = sizeof c;
  const auto p = attn_tune::make_problem(1, 8, 8, 3000, 3000, 128);
  EXPECT_EQ(attn_tune_table_lookup(t, "NVIDIA H100 80GB HBM3", 9, 0, 132, &p, &c), ATTN_TUNE_ERROR_TABLE);
  EXPECT_NE(error().find("not tuned on this device, NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs)"), std::string::npos)
      << error();
  EXPECT_NE(error().find("NVIDIA A100-SXM4-80GB (cc 8.0, 108 SMs)"), std::string::npos) << error();
  attn_tune_table_destroy(t);
}

TEST(LibraryTable, EntriesOfEachDeviceStayApart) {
  const auto c = lookup(data + "library_export.csv", attn_tune::make_problem(1, 8, 8, 4096, 4096, 128, ATTN_TUNE_FP16),
                        "NVIDIA A100-SXM4-80GB", 8, 0, 108);
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m128_n64_w4_s3");
}

// Issue 21, item 8: compute capability 10.0 and 12.0 are read as such (not 1.0 and 1.20).
TEST(LibraryTable, Sm100AndSm120DevicesRunTheirEntries) {
  const std::string table = testing::TempDir() + "blackwell.csv";
  std::ofstream(table) << "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,"
                          "warps,stages,knob,tflops,tuned_shapes\n"
                          "\"NVIDIA B200\",10.0,148,bf16,128,0,2048,4096,fa2,128,64,4,2,0,1,1\n"
                          "\"RTX 5090\",12.0,170,bf16,128,0,2048,4096,fa2,64,64,4,1,0,1,1\n";
  auto c = lookup(table, attn_tune::make_problem(1, 8, 8, 3000, 3000, 128), "NVIDIA B200", 10, 0, 148);
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m128_n64_w4_s2");
  c = lookup(table, attn_tune::make_problem(1, 8, 8, 3000, 3000, 128), "RTX 5090", 12, 0, 170);
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m64_n64_w4_s1");
}

// Issue 21, item 17: an entry of a family this library lacks is refused naming it.
TEST(LibraryTable, AnUnknownFamilyIsRefused) {
  const std::string table = testing::TempDir() + "fa3.csv";
  std::ofstream(table) << "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,"
                          "warps,stages,knob,tflops,tuned_shapes\n"
                          "\"NVIDIA H200\",9.0,132,bf16,128,0,2048,4096,fa3,128,64,4,2,0,1,1\n";
  attn_tune_table* t = nullptr;
  EXPECT_EQ(attn_tune_table_load(table.c_str(), &t), ATTN_TUNE_ERROR_TABLE);
  EXPECT_NE(error().find("unknown kernel family 'fa3'"), std::string::npos) << error();
}

// Issue 21, item 10: a table is a regular file with a recognised header: /dev/null, an empty file
// and a folder are refused (not read as an empty table), /dev/zero, /dev/urandom and a FIFO
// without a writer too (without reading them for ever).
TEST(LibraryTable, OnlyARegularFileWithAHeaderIsATable) {
  const std::string empty = testing::TempDir() + "empty.csv", fifo = testing::TempDir() + "table.fifo";
  std::ofstream(empty).close();
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/null", "it is not a regular file"}, {empty, "empty, not a table of attn-tune"},
      {testing::TempDir(), "it is a directory"}, {"/dev/zero", "it is not a regular file"},
      {"/dev/urandom", "it is not a regular file"}, {fifo, "it is not a regular file"}};
  for (const auto& [path, why] : cases) {
    attn_tune_table* t = nullptr;
    EXPECT_EQ(attn_tune_table_load(path.c_str(), &t), ATTN_TUNE_ERROR_TABLE) << path;
    EXPECT_NE(error().find(why), std::string::npos) << path << ": " << error();
    EXPECT_EQ(t, nullptr);
  }
  std::remove(fifo.c_str());
}

// A results CSV of schema 3 (before the end line): the columns before "noise" of `current`'s lines.
std::string as_schema_3(const std::string& current) {
  std::string out;
  size_t keep = 0;
  std::istringstream in(current);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#end,", 0) == 0) continue;
    if (keep == 0) keep = static_cast<size_t>(std::count(line.begin(), line.begin() + line.find(",noise,"), ',')) + 1;
    size_t fields = 0, at = 0;
    for (bool quoted = false; at < line.size() && fields < keep; ++at) {
      if (line[at] == '"') quoted = !quoted;
      else if (line[at] == ',' && !quoted) ++fields;
    }
    out += (out.empty() ? line.substr(0, at - 1) : "3" + line.substr(line.find(','), at - 1 - line.find(','))) + "\n";
  }
  return out;
}

// Issue 21, item 15: the library prints nothing; a warning is the caller's to read.
TEST(LibraryTable, AWarningIsKeptNotPrinted) {
  const std::string old = testing::TempDir() + "schema3.csv";
  std::ofstream(old) << as_schema_3(read(data + "export_fixture.csv"));
  testing::internal::CaptureStderr();
  attn_tune_table* t = nullptr;
  ASSERT_EQ(attn_tune_table_load(old.c_str(), &t), ATTN_TUNE_OK) << error();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(attn_tune::last_warning().find("has no '#end' line (schema_version 3"), std::string::npos)
      << attn_tune::last_warning();
  attn_tune_choice c{};
  c.struct_size = sizeof c;
  const auto p = attn_tune::make_problem(4, 32, 32, 4096, 4096, 128);
  EXPECT_EQ(attn_tune_table_lookup(t, "NVIDIA H200", 9, 0, 132, &p, &c), ATTN_TUNE_OK) << error();
  EXPECT_STREQ(c.config, "m256_n64_w8_s2");
  EXPECT_EQ(attn_tune::last_warning(), "");  // this call's: none
  attn_tune_table_destroy(t);
  EXPECT_EQ(attn_tune_api_version(), ATTN_TUNE_API_VERSION);
  EXPECT_EQ(ATTN_TUNE_API_VERSION, 7);
}

TEST(LibraryTable, UnreadableTablesAreNamed) {
  attn_tune_table* t = nullptr;
  EXPECT_EQ(attn_tune_table_load("/no/such/table.csv", &t), ATTN_TUNE_ERROR_TABLE);
  EXPECT_EQ(error(), "cannot read '/no/such/table.csv'");
  const std::string bad = testing::TempDir() + "not_a_table.csv";
  std::ofstream(bad) << "hello,world\n1,2\n";
  EXPECT_EQ(attn_tune_table_load(bad.c_str(), &t), ATTN_TUNE_ERROR_TABLE);
  EXPECT_NE(error().find("not a table of attn-tune"), std::string::npos) << error();
  const std::string db = testing::TempDir() + "tuned.db";
  std::ofstream(db) << std::string("SQLite format 3\0", 16);
  EXPECT_EQ(attn_tune_table_load(db.c_str(), &t), ATTN_TUNE_ERROR_TABLE);
  EXPECT_NE(error().find("cannot read the tuned-results database: '" + db + "' is not an attn-tune database"),
            std::string::npos)
      << error();
  EXPECT_EQ(t, nullptr);
}

// --- bundles (tests/data/library_bundle_table.csv, bundled by the cli_bundle_fixture test) ---

std::string bundle_path() { return std::string(ATTN_TUNE_BINARY_DIR) + "/fixture.attnb"; }


TEST(LibraryBundle, ItsTableIsReadBack) {
  if (read(bundle_path()).empty()) GTEST_SKIP() << "no " << bundle_path() << " (run the cli_bundle_fixture test)";
  const auto c = lookup(bundle_path(), attn_tune::make_problem(2, 4, 4, 1000, 1000, 64, ATTN_TUNE_BF16, true));
  EXPECT_EQ(c.source, ATTN_TUNE_SOURCE_BUCKET);
  EXPECT_STREQ(c.config, "m64_n64_w4_s2");
}

TEST(LibraryBundle, ACorruptOneIsRefused) {
  std::string bytes = read(bundle_path());
  if (bytes.empty()) GTEST_SKIP() << "no " << bundle_path();
  bytes[bytes.size() / 2] ^= 0x5a;
  const std::string corrupt = testing::TempDir() + "corrupt.attnb";
  std::ofstream(corrupt, std::ios::binary) << bytes;
  attn_tune_table* t = nullptr;
  EXPECT_EQ(attn_tune_table_load(corrupt.c_str(), &t), ATTN_TUNE_ERROR_BUNDLE);
  EXPECT_NE(error().find("is corrupt: checksum"), std::string::npos) << error();
  const std::string truncated = testing::TempDir() + "truncated.attnb";
  std::ofstream(truncated, std::ios::binary) << read(bundle_path()).substr(0, bytes.size() - 40);
  EXPECT_EQ(attn_tune_table_load(truncated.c_str(), &t), ATTN_TUNE_ERROR_BUNDLE);
  EXPECT_NE(error().find("is corrupt"), std::string::npos) << error();
}

}  // namespace
