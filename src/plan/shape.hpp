#pragma once
// The attention problem: sizes, element type, layout, and the formulas derived from them.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace attn {

/// Bad user input (CLI value, sweep row, space token). The message names the bad value.
struct invalid_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class dtype { bf16, fp16 };
enum class layout { bhsd, bshd };  ///< [B,H,N,D] (default) or [B,N,H,D]

struct shape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;  ///< H % kv_heads == 0; < heads means GQA/MQA
  int64_t q_len = 1;
  int64_t kv_len = 1;  ///< != q_len means cross-attention
  int64_t head_dim = 64;
  bool causal = false;  ///< bottom-right aligned: key j is masked for query i when j > i + kv_len - q_len
  attn::dtype dtype = dtype::bf16;
  attn::layout layout = layout::bhsd;
};

int element_size(dtype t);
std::string to_string(dtype t);  ///< "bf16" / "fp16"
std::string to_string(layout l);  ///< "bhsd" / "bshd"
dtype parse_dtype(const std::string& text);  ///< throws invalid_input naming the text
layout parse_layout(const std::string& text);

/// Parses "B,H,N,D" into batch, heads (= kv_heads), q_len (= kv_len), head_dim.
shape parse_shape(const std::string& text);
/// Throws invalid_input naming the first bad value: non-positive sizes, H % kv_heads != 0,
/// head_dim not a multiple of 16 in [32, 256].
void validate(const shape& s);
/// "B4 H32 N4096 D128 bf16 bhsd causal"; shows "/kv" and "xNkv" only when they differ.
std::string describe(const shape& s);

/// 4*B*H*Nq*Nkv*D, halved when causal (FlashAttention/Triton convention).
double attention_flops(const shape& s);
double tflops(const shape& s, double milliseconds);

int64_t q_bytes(const shape& s);   ///< also the size of O
int64_t kv_bytes(const shape& s);  ///< one of K or V
/// Extra device memory a materializing implementation needs: scores in fp32 plus
/// probabilities in the input type, B*H*Nq*Nkv*(4 + element size).
int64_t materialized_extra_bytes(const shape& s);
/// What the fused kernel needs beyond Q, K, V and O: its LSE, B*H*Nq*4.
int64_t lse_bytes(const shape& s);

/// Element offset of (b, h, i, 0) for a tensor with `h_count` heads and `n` rows in layout l.
int64_t element_offset(layout l, int64_t h_count, int64_t n, int64_t d, int64_t b, int64_t h, int64_t i);

}  // namespace attn
