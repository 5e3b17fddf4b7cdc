#include "plan/shape.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attn {

namespace {

constexpr int64_t min_head_dim = 32;
constexpr int64_t max_head_dim = 256;
constexpr int64_t head_dim_multiple = 16;

// from_chars rather than stoll: stoll skips whitespace, accepts a '+' and stops silently at
// trailing junk, all of which would let a typo through as a different shape.
bool parse_positive(std::string_view text, int64_t& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  for (;;) {
    size_t at = text.find(separator);
    fields.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return fields;
    text.remove_prefix(at + 1);
  }
}

void require_positive(const char* what, int64_t value) {
  if (value <= 0) throw invalid_input(fmt::format("{} {} is not a positive integer", what, value));
}

// a * b, or false when it does not fit: byte counts are int64 and must never wrap silently.
bool multiply(int64_t a, int64_t b, int64_t& product) {
  return !__builtin_mul_overflow(a, b, &product);
}

}  // namespace

int element_size(dtype t) {
  switch (t) {
    case dtype::bf16:
    case dtype::fp16:
      return 2;
  }
  throw std::logic_error("element_size: unknown dtype");
}

std::string to_string(dtype t) {
  switch (t) {
    case dtype::bf16: return "bf16";
    case dtype::fp16: return "fp16";
  }
  throw std::logic_error("to_string: unknown dtype");
}

std::string to_string(layout l) {
  switch (l) {
    case layout::bhsd: return "bhsd";
    case layout::bshd: return "bshd";
  }
  throw std::logic_error("to_string: unknown layout");
}

dtype parse_dtype(const std::string& text) {
  if (text == "bf16") return dtype::bf16;
  if (text == "fp16") return dtype::fp16;
  throw invalid_input(fmt::format("invalid dtype '{}': expected bf16 or fp16", text));
}

layout parse_layout(const std::string& text) {
  if (text == "bhsd") return layout::bhsd;
  if (text == "bshd") return layout::bshd;
  throw invalid_input(fmt::format("invalid layout '{}': expected bhsd or bshd", text));
}

shape parse_shape(const std::string& text) {
  std::vector<std::string_view> fields = split(text, ',');
  if (fields.size() != 4) {
    throw invalid_input(fmt::format("invalid --shape '{}': expected B,H,N,D (4 values), got {}",
                                    text, fields.size()));
  }
  int64_t values[4] = {};
  for (size_t i = 0; i < 4; ++i) {
    if (!parse_positive(fields[i], values[i])) {
      throw invalid_input(
          fmt::format("invalid --shape '{}': '{}' is not a positive integer", text, fields[i]));
    }
  }
  shape s;
  s.batch = values[0];
  s.heads = s.kv_heads = values[1];
  s.q_len = s.kv_len = values[2];
  s.head_dim = values[3];
  try {
    validate(s);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("invalid --shape '{}': {}", text, e.what()));
  }
  return s;
}

void validate(const shape& s) {
  require_positive("batch", s.batch);
  require_positive("heads", s.heads);
  require_positive("kv-heads", s.kv_heads);
  require_positive("q-len", s.q_len);
  require_positive("kv-len", s.kv_len);
  require_positive("head dim", s.head_dim);
  if (s.head_dim % head_dim_multiple != 0 || s.head_dim < min_head_dim ||
      s.head_dim > max_head_dim) {
    throw invalid_input(fmt::format("head dim {} is not a multiple of {} in [{}, {}]", s.head_dim,
                                    head_dim_multiple, min_head_dim, max_head_dim));
  }
  if (s.heads % s.kv_heads != 0) {
    throw invalid_input(
        fmt::format("heads {} not divisible by kv-heads {}", s.heads, s.kv_heads));
  }
  // The largest byte count derived from a shape is the materialized score matrix; if that and
  // the largest tensor fit in int64, every formula in this file does too.
  const int64_t max_len = std::max(s.q_len, s.kv_len);
  int64_t scores = 0, tensor = 0;
  bool fits = multiply(s.batch, s.heads, scores) && multiply(scores, s.q_len, scores) &&
              multiply(scores, s.kv_len, scores) && multiply(scores, 8, scores) &&
              multiply(s.batch, s.heads, tensor) && multiply(tensor, max_len, tensor) &&
              multiply(tensor, s.head_dim, tensor) && multiply(tensor, 8, tensor);
  if (!fits) throw invalid_input(fmt::format("shape {} is too large", describe(s)));
}

std::string describe(const shape& s) {
  std::string text = fmt::format("B{} H{}", s.batch, s.heads);
  if (s.kv_heads != s.heads) text += fmt::format("/{}", s.kv_heads);
  text += fmt::format(" N{}", s.q_len);
  if (s.kv_len != s.q_len) text += fmt::format("x{}", s.kv_len);
  text += fmt::format(" D{} {} {}", s.head_dim, to_string(s.dtype), to_string(s.layout));
  if (s.causal) text += " causal";
  return text;
}

double attention_flops(const shape& s) {
  // In double from the start: the integer product overflows int64 for long sequences.
  double flops = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) *
                 static_cast<double>(s.q_len) * static_cast<double>(s.kv_len) *
                 static_cast<double>(s.head_dim);
  return s.causal ? flops / 2 : flops;
}

double tflops(const shape& s, double milliseconds) {
  // A zero or negative time is a measurement bug; an infinite rate in a table would hide it.
  if (!(milliseconds > 0)) {
    throw std::invalid_argument(fmt::format("tflops: time {} ms is not positive", milliseconds));
  }
  return attention_flops(s) / (milliseconds * 1e9);
}

int64_t q_bytes(const shape& s) {
  return s.batch * s.heads * s.q_len * s.head_dim * element_size(s.dtype);
}

int64_t kv_bytes(const shape& s) {
  return s.batch * s.kv_heads * s.kv_len * s.head_dim * element_size(s.dtype);
}

int64_t materialized_extra_bytes(const shape& s) {
  return s.batch * s.heads * s.q_len * s.kv_len * (4 + element_size(s.dtype));
}

int64_t lse_bytes(const shape& s) { return s.batch * s.heads * s.q_len * 4; }

int64_t element_offset(layout l, int64_t h_count, int64_t n, int64_t d, int64_t b, int64_t h,
                       int64_t i) {
  switch (l) {
    case layout::bhsd: return ((b * h_count + h) * n + i) * d;
    case layout::bshd: return ((b * n + i) * h_count + h) * d;
  }
  throw std::logic_error("element_offset: unknown layout");
}

}  // namespace attn
