#pragma once
// Warnings that are not errors (a file read with less checking than usual, a cache entry compiled
// again): the tool prints them on stderr; libattn_tune, which never prints, keeps them for its
// caller (attn_tune_last_warning). Whoever reads or compiles on their behalf is handed a sink.
#include <functional>
#include <string>

namespace attn {

/// Takes one warning's line, "warning: ..." or "note: ...", without a newline.
using warning_sink = std::function<void(const std::string&)>;

/// The tool's sink: the line on stderr.
void print_warning(const std::string& line);

}  // namespace attn
