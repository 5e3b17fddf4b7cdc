// The sweep-file reader: any bytes give rows of valid shapes or invalid_input, nothing else.
#include "fuzz_input.hpp"
#include "core/problem.hpp"
#include "sweep/sweep_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const auto& row : attn::read_sweep_file(attn::fuzz::input_file(data, size))) attn::validate(row.problem);
  } catch (const attn::invalid_input&) {
  }
  return 0;
}
