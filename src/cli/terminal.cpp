#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

namespace attn {

bool use_colour(bool is_terminal, const char* no_color_env) {
  return is_terminal && !(no_color_env && *no_color_env);
}

bool colour_for(std::FILE* stream) { return use_colour(isatty(fileno(stream)) != 0, std::getenv("NO_COLOR")); }

std::string styled(bool colour, const fmt::text_style& style, const std::string& text) {
  return colour ? fmt::format(style, "{}", text) : text;
}

std::string fit_width(const std::string& text, int width) {
  if (width <= 0 || static_cast<int>(text.size()) <= width) return text;
  if (width <= 3) return text.substr(0, static_cast<size_t>(width));
  return text.substr(0, static_cast<size_t>(width - 3)) + "...";
}

int terminal_width(std::FILE* stream) {
  winsize w{};
  if (isatty(fileno(stream)) == 0 || ioctl(fileno(stream), TIOCGWINSZ, &w) != 0) return 0;
  return w.ws_col;
}

}  // namespace attn
