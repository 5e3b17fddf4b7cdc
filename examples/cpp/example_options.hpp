// The example's command line: the problem (as attn-tune spells it: --shape B,H,N,D, --kv-heads,
// --kv-len, --dv, --dtype, --layout, --causal, --seqlens, --kv-seqlens, --window, --softcap), the
// table, and what to check. A bad value is an example::usage_error naming it.
#pragma once
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn_tune/attn_tune.hpp"

namespace example {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* usage_text =
    "usage: attn_tune_example [--table T | --bundle B] [--shape] B,H,N,D [--kv-heads H] [--kv-len N]\n"
    "                         [--dv DV] [--dtype bf16|fp16] [--layout bhsd|bshd] [--causal]\n"
    "                         [--seqlens L1,..,LB [--kv-seqlens L1,..,LB]] [--window LEFT,RIGHT] [--softcap C]\n"
    "                         [--check-heads K] [--no-check] [--seed S]\n"
    "Runs one attention forward through libattn_tune on random inputs, times it as attn-tune times a\n"
    "variant (CUDA events, 3 warm-up calls, L2 flushed before each repetition, median of 20 to 300),\n"
    "and checks it against float64 attention on K heads (default 4) under FlashAttention's rule.\n"
    "  --table T       an export of `attn-tune export`, a results CSV, a tuned-results database or a bundle\n"
    "  --bundle B      a bundle of `attn-tune bundle` (cubins loaded without NVRTC)\n"
    "  B,H,N,D         batch, heads, query length, head dim (default 4,32,4096,128)\n"
    "  --kv-heads H    K/V heads (GQA; default H)    --kv-len N  keys (default N)\n"
    "  --dv DV         V's and O's head dim (default D; e.g. --shape 1,128,4096,192 --dv 128)\n"
    "  --seqlens L1,..,LB  a packed variable-length batch (flash_attn_varlen_func): B lengths, 0 allowed,\n"
    "                  each at most N (without --shape: N is the longest). Q, K, V and O are packed as\n"
    "                  [total, H, D] (--layout bshd, FlashAttention's) or [H, total, D] (bhsd), with\n"
    "                  int32 offsets cu_seqlens [B + 1] on the GPU; each sequence is attended alone\n"
    "                  (causal: bottom-right in it), and TFLOPS count each one's own pairs.\n"
    "                  E.g. --shape 4,16,2048,128 --seqlens 2048,100,0,700 --layout bshd --causal\n"
    "  --kv-seqlens L1,..,LB  the keys' lengths (cross-attention), each at most --kv-len (default: the longest)\n"
    "  --window L,R    sliding window (FlashAttention's window_size): query i sees key j when\n"
    "                  i + N_kv - N - L <= j <= i + N_kv - N + R; -1: no limit on that side; R 0 is --causal\n"
    "  --softcap C     scores become C*tanh(score/C) after the scale, before the softmax (Gemma-2: 50)\n"
    "The table's row for this exact problem serves the call when there is one (a packed batch's: a row of\n"
    "attn-tune --seqlens with the same B, H, N, D and options, whatever its lengths); else the bucket of N.\n"
    "Exit codes: 0 passed, 1 the check failed, 2 bad arguments, 3 a failure of the library or CUDA.\n";

struct example_options {
  attn_tune::context_options context;
  int64_t batch = 4, heads = 32, kv_heads = 0, q_len = 4096, kv_len = 0, head_dim = 128;
  int64_t head_dim_v = 0;  ///< 0: head_dim
  int dtype = ATTN_TUNE_BF16, layout = ATTN_TUNE_BHSD;
  bool causal = false, check = true, help = false;
  /// A packed variable-length batch: each sequence's query count (--seqlens; empty: not packed) and
  /// key count (--kv-seqlens; the query counts for self-attention).
  std::vector<int64_t> seqlens, kv_seqlens;
  /// A sliding window (-1: no limit on that side; a right side of 0 is read as causal) and softcap (0: off).
  int64_t window_left = -1, window_right = -1;
  float softcap = 0;
  int check_heads = 4;
  uint32_t seed = 1;
};

// A whole number (an optional '-', then digits only), or false.
inline bool whole(const std::string& text, int64_t& v) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-')) return false;
  size_t used = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

inline int64_t positive(const std::string& text, const std::string& what) {
  int64_t v = 0;
  if (!whole(text, v) || v <= 0)
    throw usage_error("invalid " + what + " '" + text + "': expected a positive whole number");
  return v;
}

// "L1,L2,...": lengths of 0 or more.
inline std::vector<int64_t> parse_lengths(const std::string& text, const std::string& what) {
  std::vector<int64_t> lengths;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t n = 0;
    if (!whole(item, n) || n < 0)
      throw usage_error("invalid " + what + " '" + text + "': '" + item + "' is not a length (a whole number >= 0)");
    lengths.push_back(n);
    if (comma == std::string::npos) return lengths;
    start = comma + 1;
  }
}

// A packed batch's lengths against the shape: one a sequence, each at most `bound`, not all 0, and
// a total that int32 offsets (cu_seqlens) hold.
inline void check_lengths(const std::vector<int64_t>& lengths, const std::string& what, const std::string& text,
                          int64_t batch, int64_t bound, const std::string& bound_name) {
  const std::string bad = "invalid " + what + " '" + text + "': ";
  if (static_cast<int64_t>(lengths.size()) != batch)
    throw usage_error(bad + std::to_string(lengths.size()) + " lengths for a batch of " + std::to_string(batch) +
                      " (B of --shape): give one a sequence");
  for (int64_t n : lengths)
    if (n > bound)
      throw usage_error(bad + "length " + std::to_string(n) + " is over " + std::to_string(bound) + " (" + bound_name +
                        "), the longest a sequence may be");
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  if (total == 0) throw usage_error(bad + "every length is 0: nothing to attend");
  if (total > INT32_MAX)
    throw usage_error(bad + std::to_string(total) + " rows in all, more than int32 offsets (cu_seqlens) hold");
}

inline void parse_shape(const std::string& text, example_options& o) {
  int64_t* fields[] = {&o.batch, &o.heads, &o.q_len, &o.head_dim};
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t comma = text.find(',', start);
    if ((i < 3) == (comma == std::string::npos))
      throw usage_error("invalid shape '" + text + "': expected B,H,N,D, e.g. 4,32,4096,128");
    *fields[i] = positive(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                          std::string("shape field ") + "BHND"[i] + " of '" + text + "'");
    start = comma + 1;
  }
}

inline void parse_window(const std::string& text, example_options& o) {
  const size_t comma = text.find(',');
  int64_t left = 0, right = 0;
  if (comma == std::string::npos || !whole(text.substr(0, comma), left) || !whole(text.substr(comma + 1), right) ||
      left < -1 || right < -1)
    throw usage_error("invalid --window '" + text + "': expected LEFT,RIGHT, each -1 (no limit) or a count of keys");
  o.window_left = left, o.window_right = right;
}

inline float parse_softcap(const std::string& text) {
  size_t used = 0;
  float c = -1;
  try {
    if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) c = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(c) || c < 0)
    throw usage_error("invalid --softcap '" + text + "': expected 0 (off) or a positive cap, e.g. 50");
  return c;
}

inline example_options parse_example_options(int argc, char** argv) {
  example_options o;
  bool shape_given = false;
  std::string seqlens_text, kv_seqlens_text, window_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--table") o.context.table = value();
    else if (a == "--bundle") o.context.bundle = value();
    else if (a == "--shape") parse_shape(value(), o), shape_given = true;
    else if (a == "--kv-heads") o.kv_heads = positive(value(), "--kv-heads");
    else if (a == "--kv-len") o.kv_len = positive(value(), "--kv-len");
    else if (a == "--dv") o.head_dim_v = positive(value(), "--dv");
    else if (a == "--causal") o.causal = true;
    else if (a == "--seqlens") o.seqlens = parse_lengths(seqlens_text = value(), "--seqlens");
    else if (a == "--kv-seqlens") o.kv_seqlens = parse_lengths(kv_seqlens_text = value(), "--kv-seqlens");
    else if (a == "--window") parse_window(window_text = value(), o);
    else if (a == "--softcap") o.softcap = parse_softcap(value());
    else if (a == "--no-check") o.check = false;
    else if (a == "--check-heads") o.check_heads = static_cast<int>(positive(value(), "--check-heads"));
    else if (a == "--seed") o.seed = static_cast<uint32_t>(positive(value(), "--seed"));
    else if (a == "--dtype") {
      const std::string v = value();
      if (v != "bf16" && v != "fp16") throw usage_error("invalid --dtype '" + v + "': expected bf16 or fp16");
      o.dtype = v == "bf16" ? ATTN_TUNE_BF16 : ATTN_TUNE_FP16;
    } else if (a == "--layout") {
      const std::string v = value();
      if (v != "bhsd" && v != "bshd") throw usage_error("invalid --layout '" + v + "': expected bhsd or bshd");
      o.layout = v == "bhsd" ? ATTN_TUNE_BHSD : ATTN_TUNE_BSHD;
    } else if (!a.empty() && a[0] != '-') parse_shape(a, o), shape_given = true;
    else throw usage_error("unknown option '" + a + "'");
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  if (!o.kv_seqlens.empty() && o.seqlens.empty())
    throw usage_error("--kv-seqlens '" + kv_seqlens_text + "' needs --seqlens: the packed batch's queries' lengths");
  if (!o.seqlens.empty()) {
    // As attn-tune reads them: N of --shape bounds the lengths (without --shape, N is the longest).
    if (!shape_given) o.q_len = std::max<int64_t>(1, *std::max_element(o.seqlens.begin(), o.seqlens.end()));
    check_lengths(o.seqlens, "--seqlens", seqlens_text, o.batch, o.q_len, "N of --shape");
    if (o.kv_seqlens.empty()) {  // self-attention: the keys' lengths are the queries'
      if (o.kv_len != 0 && o.kv_len != o.q_len)
        throw usage_error("--seqlens with --kv-len " + std::to_string(o.kv_len) + " != N " + std::to_string(o.q_len) +
                          ": cross-attention of a packed batch needs the keys' lengths (--kv-seqlens)");
      o.kv_seqlens = o.seqlens;
    } else {
      if (o.kv_len == 0) o.kv_len = std::max<int64_t>(1, *std::max_element(o.kv_seqlens.begin(), o.kv_seqlens.end()));
      check_lengths(o.kv_seqlens, "--kv-seqlens", kv_seqlens_text, o.batch, o.kv_len, "--kv-len");
    }
  }
  if (o.kv_len == 0) o.kv_len = o.q_len;
  if (o.head_dim_v == 0) o.head_dim_v = o.head_dim;
  if (o.causal && o.window_right > 0)
    throw usage_error("invalid --window '" + window_text + "' with --causal: the causal mask hides every key right of "
                      "the diagonal, so RIGHT must be 0 or -1");
  if (o.window_right == 0) o.causal = true, o.window_right = -1;  // a right side of 0 is the causal mask
  return o;
}

}  // namespace example
