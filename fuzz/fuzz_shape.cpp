// --shape: any text gives a valid shape (whose formulas do not overflow) or invalid_input.
#include "fuzz_input.hpp"
#include "core/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    attn::problem s = attn::parse_shape(attn::fuzz::text_of(data, size));
    attn::validate(s);
    (void)attn::attention_flops(s);
    (void)attn::describe(s);
  } catch (const attn::invalid_input&) {
  }
  return 0;
}
