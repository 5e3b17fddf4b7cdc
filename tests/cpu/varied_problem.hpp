#pragma once
// A problem with one field changed, for tests that check a serializer or a key sees every field
// of attn::problem (problem_fields(): a field added there is varied here too).
#include <string>

#include "core/problem.hpp"

namespace attn {

// `base` with field f changed to another valid value: integers doubled (0 and -1 become 16, or 64
// or 128 where 16 is not valid), reals doubled (0 becomes 50), flags flipped, text fields to the
// first of a few known words the field takes and that differs.
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
      for (const char* word : {"fp16", "bf16", "bshd", "bhsd", "uniform:1:100"}) {
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

}  // namespace attn
