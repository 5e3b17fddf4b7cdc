// The example's command line: the problem (as attn-tune spells it: --shape B,H,N,D, --kv-heads,
// --kv-len, --dtype, --layout, --causal), the table, and what to check. A bad value is an
// example::usage_error naming it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "attn_tune/attn_tune.hpp"

namespace example {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* usage_text =
    "usage: attn_tune_example [--table T | --bundle B] [--shape] B,H,N,D [--kv-heads H] [--kv-len N]\n"
    "                         [--dv DV] [--dtype bf16|fp16] [--layout bhsd|bshd] [--causal] [--check-heads K]\n"
    "                         [--no-check] [--seed S]\n"
    "Runs one attention forward through libattn_tune on random inputs, times it as attn-tune times a\n"
    "variant (CUDA events, 3 warm-up calls, L2 flushed before each repetition, median of 20 to 300),\n"
    "and checks it against float64 attention on K heads (default 4) under FlashAttention's rule.\n"
    "  --table T       an export of `attn-tune export`, a results CSV, a tuned-results database or a bundle\n"
    "  --bundle B      a bundle of `attn-tune bundle` (cubins loaded without NVRTC)\n"
    "  B,H,N,D         batch, heads, query length, head dim (default 4,32,4096,128)\n"
    "  --kv-heads H    K/V heads (GQA; default H)    --kv-len N  keys (default N)\n"
    "  --dv DV         V's and O's head dim (default D; e.g. --shape 1,128,4096,192 --dv 128)\n"
    "Exit codes: 0 passed, 1 the check failed, 2 bad arguments, 3 a failure of the library or CUDA.\n";

struct example_options {
  attn_tune::context_options context;
  int64_t batch = 4, heads = 32, kv_heads = 0, q_len = 4096, kv_len = 0, head_dim = 128;
  int64_t head_dim_v = 0;  ///< 0: head_dim
  int dtype = ATTN_TUNE_BF16, layout = ATTN_TUNE_BHSD;
  bool causal = false, check = true, help = false;
  int check_heads = 4;
  uint32_t seed = 1;
};

inline int64_t positive(const std::string& text, const std::string& what) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v <= 0)
    throw usage_error("invalid " + what + " '" + text + "': expected a positive whole number");
  return v;
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

inline example_options parse_example_options(int argc, char** argv) {
  example_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--table") o.context.table = value();
    else if (a == "--bundle") o.context.bundle = value();
    else if (a == "--shape") parse_shape(value(), o);
    else if (a == "--kv-heads") o.kv_heads = positive(value(), "--kv-heads");
    else if (a == "--kv-len") o.kv_len = positive(value(), "--kv-len");
    else if (a == "--dv") o.head_dim_v = positive(value(), "--dv");
    else if (a == "--causal") o.causal = true;
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
    } else if (!a.empty() && a[0] != '-') parse_shape(a, o);
    else throw usage_error("unknown option '" + a + "'");
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  if (o.kv_len == 0) o.kv_len = o.q_len;
  if (o.head_dim_v == 0) o.head_dim_v = o.head_dim;
  return o;
}

}  // namespace example
