// --space: any tokens give a space or invalid_input, and every family's resource model runs on
// the configs of an accepted space without signed overflow (UBSan).
#include "codegen/family.hpp"
#include "fuzz_input.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = attn::fuzz::text_of(data, size);
  std::vector<std::string> tokens;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) tokens.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  for (const auto* family : {&attn::fa2_family(), &attn::wgmma_family(), &attn::mfma_family()}) {
    try {
      const attn::search_space space = attn::parse_space(tokens, family->default_space);
      attn::problem s;
      s.batch = 1, s.heads = 8, s.kv_heads = 8, s.q_len = s.kv_len = 1024, s.head_dim = 128;
      attn::resource_limits limits;
      size_t n = 0;
      for (const auto& c : space.enumerate()) {
        if (++n > 256) break;
        (void)family->shared_memory_bytes(c, s);
        (void)family->threads(c);
        (void)family->reject_reason(c, s, limits);
      }
    } catch (const attn::invalid_input&) {
    }
  }
  return 0;
}
