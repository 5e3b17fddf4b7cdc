#pragma once
// How much attn-tune says and how: -q/--quiet (the best line and errors), -v/--verbose (every
// variant's log and measurement), colour on a terminal (fmt/color.h) unless NO_COLOR is set.
#include <cstdio>
#include <string>

#include <fmt/color.h>

namespace attn {

enum class verbosity { quiet, normal, verbose };

/// Colour only on a terminal, and never when NO_COLOR is set (to anything: no-color.org).
bool use_colour(bool is_terminal, const char* no_color_env);
/// Whether `stream` gets colour (its terminal-ness and $NO_COLOR).
bool colour_for(std::FILE* stream);
/// text in `style` when colour is on, else as it is.
std::string styled(bool colour, const fmt::text_style& style, const std::string& text);
/// text cut to `width` columns (with "..." at the end when cut); width <= 0 leaves it whole.
std::string fit_width(const std::string& text, int width);
/// The width of the terminal on `stream`, 0 when it is none.
int terminal_width(std::FILE* stream);

}  // namespace attn
