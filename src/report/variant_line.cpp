#include "report/variant_line.hpp"

#include <fmt/format.h>

namespace attn {

namespace {

// Each line of `text` below the headline, indented; nothing when it is blank.
std::string indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) out += "\n    " + line;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string variant_line(variant_event event, const record& r, const std::string& log) {
  const std::string who = fmt::format("{} {}", r.family, config_name(r));
  switch (event) {
    case variant_event::compiled:
      if (r.status == status::compile_error) return fmt::format("compile error {}:{}", who, indented(log));
      return fmt::format("compiled {}: {} registers, {} spill bytes, {:.1f} KiB shared memory, {}{}", who,
                         r.registers, r.spill_bytes, r.shared_memory_bytes / 1024.0,
                         r.cached ? "from the cache" : fmt::format("{:.0f} ms", r.compile_ms), indented(log));
    case variant_event::verified:
      if (r.status == status::compiled)
        return fmt::format("verified {}: ok, max error {:.3e} (allowed {:.3e}, {} bound)", who, r.max_error,
                           r.allowed_error, r.bound);
      return fmt::format("verified {}: {}, {}", who, to_string(r.status), r.message);
    case variant_event::screened:
    case variant_event::measured:
      if (r.status != status::ok) return fmt::format("timing {}: {}, {}", who, to_string(r.status), r.message);
      return fmt::format("{} {}: {:.4f} ms +-{:.1f}% (IQR {:.4f}, {} reps), {:.1f} TFLOPS",
                         event == variant_event::screened ? "screened" : "measured", who, r.median_ms,
                         100 * r.noise, r.iqr_ms, r.reps, r.tflops);
  }
  return who;
}

}  // namespace attn
