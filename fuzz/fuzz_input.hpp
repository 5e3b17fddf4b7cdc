#pragma once
// What the fuzz targets share: the input as text, or in a file (readers that take a path), and
// the rule that bad input may only ever end in invalid_input.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace attn::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// One file per fuzzing process (mkstemp), rewritten for every input.
inline const std::string& input_file(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    std::string p = "/tmp/attn-tune-fuzz-XXXXXX";
    const int fd = ::mkstemp(p.data());
    if (fd >= 0) ::close(fd);
    return p;
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace attn::fuzz
