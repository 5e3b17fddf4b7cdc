// --configs: any comma-separated text gives configs or invalid_input.
#include "cli/option_checks.hpp"
#include "fuzz_input.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = attn::fuzz::text_of(data, size);
  std::vector<std::string> names;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    names.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  try {
    for (const auto& n : names) {
      const attn::tile_config c = attn::parse_config_name(n);
      if (attn::name(c) != n) __builtin_trap();  // what parses is the name it is stored under
    }
    attn::check_distinct(names);
  } catch (const attn::invalid_input&) {
  }
  return 0;
}
