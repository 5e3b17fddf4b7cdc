#include "core/warning.hpp"

#include <cstdio>

namespace attn {

void print_warning(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace attn
