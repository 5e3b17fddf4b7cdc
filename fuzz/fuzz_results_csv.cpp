// The results-CSV reader: any bytes give records or invalid_input, nothing else.
#include "fuzz_input.hpp"
#include "report/best_table.hpp"
#include "report/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    attn::best_table(attn::read_csv(attn::fuzz::input_file(data, size)));
  } catch (const attn::invalid_input&) {
  }
  return 0;
}
