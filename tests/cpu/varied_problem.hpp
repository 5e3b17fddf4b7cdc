#pragma once
// A problem with one field changed, for tests that check a serializer or a key sees every field
// of attn::problem (problem_fields(): a field added there is varied here too).
#include <string>

#include "core/problem.hpp"

namespace attn {

// `base` with field f changed to another valid value: integers doubled (0 and -1 become 16, or 64
// or 128 where 16 is not valid), reals doubled (0 becomes 50), flags flipped, text fields to the
// first of a few known words the field takes and that differs (a dtype, a layout, lengths, a pass).
inline problem varied(const problem_field& f, problem base) {
  const std::string now = f.get(base);
  switch (f.type) {
    case field_type::integer:
      if (now == "0" || now == "-1") {
        // 16, or the first of 64 and 128 that is valid (head_dim_v: 0 or [32, 256], not the head dim).
        for (const char* value : {"16", "64", "128"}) {
          problem changed = base;
          f.set(changed, value);
          try {
            validate(changed);
            return changed;
          } catch (const invalid_input&) {
          }
        }
      } else {
        f.set(base, std::to_string(2 * std::stoll(now)));
      }
      break;
    case field_type::real: f.set(base, now == "0" ? "50" : std::to_string(2 * std::stod(now))); break;
    case field_type::flag: f.set(base, now == "1" ? "0" : "1"); break;
    case field_type::text:
      if (std::string(f.name) == "seqlens" || std::string(f.name) == "kv_seqlens") {
        // A packed batch's lengths come with the other side's: kv_seqlens needs seqlens, and seqlens
        // needs kv_seqlens where the lengths differ (cross-attention); neither takes kv_lens or pages.
        const std::string q = "uniform:1:" + std::to_string(base.q_len), k = "uniform:1:" + std::to_string(base.kv_len);
        base.kv_lens.clear(), base.page_size = 0;
        if (std::string(f.name) == "seqlens") {
          base.seqlens = now == q ? "uniform:0:" + std::to_string(base.q_len) : q;
          if (base.kv_len != base.q_len && base.kv_seqlens.empty()) base.kv_seqlens = k;
        } else {
          if (base.seqlens.empty()) base.seqlens = q;
          base.kv_seqlens = now == k ? "uniform:0:" + std::to_string(base.kv_len) : k;
        }
        break;
      }
      for (const char* word : {"fp16", "bf16", "bshd", "bhsd", "uniform:1:100", "bwd", "fwd"}) {
        try {
          f.set(base, word);
        } catch (const invalid_input&) {
          continue;
        }
        if (f.get(base) != now) break;
      }
      break;
  }
  validate(base);
  return base;
}

/// Whether varied(a) may change b too: a packed batch's two lengths come together (kv_seqlens needs
/// seqlens; seqlens needs kv_seqlens for cross-attention).
inline bool varied_together(const problem_field& a, const problem_field& b) {
  const auto packed = [](const problem_field& f) {
    return std::string(f.name) == "seqlens" || std::string(f.name) == "kv_seqlens";
  };
  return packed(a) && packed(b);
}

}  // namespace attn
