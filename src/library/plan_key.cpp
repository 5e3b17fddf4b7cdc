#include "library/plan_key.hpp"

#include <string>
#include <type_traits>

namespace attn {

namespace {

template <class T>
void append(std::string& key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

std::string problem_bytes(const problem& s) {
  // A new field of attn::problem changes its size: it must be appended below too (a field left
  // out would let two problems that differ in it share a plan). The 8: pass (an enum, padded).
  static_assert(sizeof(problem) == 104 + 3 * sizeof(std::string) + 8, "attn::problem has a new field: append it to problem_bytes");
  std::string key;
  key.reserve(13 * sizeof(int64_t) + s.kv_lens.size() + s.seqlens.size() + s.kv_seqlens.size() + 4 +
              sizeof(attn_k::fwd_params) + sizeof(void*) + 2);
  for (int64_t v : {s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, s.page_size, s.window_left,
                    s.window_right, s.head_dim_v})
    append(key, v);
  append(key, s.softcap);
  key += static_cast<char>(s.causal);
  key += static_cast<char>(s.dtype);
  key += static_cast<char>(s.layout);
  key += static_cast<char>(s.pass);
  append(key, static_cast<int64_t>(s.kv_lens.size()));
  key += s.kv_lens;
  for (const std::string* text : {&s.seqlens, &s.kv_seqlens}) {
    append(key, static_cast<int64_t>(text->size()));
    key += *text;
  }
  return key;
}

std::string plan_key(const problem& s, const attn_k::fwd_params& params, const void* stream, bool capturing) {
  // fwd_params has no padding (its bytes are the key); a new field must keep it so.
  static_assert(sizeof(attn_k::fwd_params) == 256, "attn_k::fwd_params changed: check that plan_key still sees "
                                                   "every byte of it (no padding)");
  std::string key = problem_bytes(s);
  append(key, params);
  append(key, stream);
  key += static_cast<char>(capturing);
  return key;
}

}  // namespace attn
