#include "report/csv_trailer.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/digest.hpp"
#include "core/problem.hpp"

namespace attn {

namespace {
constexpr std::string_view marker = "#end,";
}

std::string csv_trailer(std::string_view body, size_t rows) {
  return fmt::format("#end,rows={},xxh3={}\n", rows, xxh3_128_hex(body));
}

size_t last_line_number(std::string_view text) {
  if (text.empty()) return 0;
  const size_t newlines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return text.back() == '\n' ? newlines : newlines + 1;
}

csv_body split_trailer(const std::string& path, std::string_view file_text) {
  std::string_view rest = file_text;
  if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  const size_t start = rest.rfind('\n') == std::string_view::npos ? 0 : rest.rfind('\n') + 1;
  const std::string_view last = rest.substr(start);
  if (last.rfind(marker, 0) != 0) return {file_text, std::nullopt};
  const std::string_view body = file_text.substr(0, start);
  const size_t line = last_line_number(body) + 1;
  auto bad = [&](const std::string& why) {
    return invalid_input(fmt::format("cannot read results CSV '{}': line {} (its end line '{}'): {}", path, line,
                                     last, why));
  };
  size_t rows = 0;
  std::string_view digest;
  {
    std::string_view fields = last.substr(marker.size());
    const size_t comma = fields.find(',');
    const std::string_view count = fields.substr(0, comma);
    if (count.rfind("rows=", 0) != 0 || comma == std::string_view::npos ||
        fields.substr(comma + 1).rfind("xxh3=", 0) != 0)
      throw bad("expected #end,rows=N,xxh3=HEX");
    const auto [end, ec] = std::from_chars(count.data() + 5, count.data() + count.size(), rows);
    if (ec != std::errc() || end != count.data() + count.size()) throw bad("bad row count");
    digest = fields.substr(comma + 1 + 5);
  }
  const std::string actual = xxh3_128_hex(body);
  if (digest != actual)
    throw bad(fmt::format("the checksum of the lines before it is {}: the file was changed or cut after it "
                          "was written",
                          actual));
  return {body, rows};
}

}  // namespace attn
