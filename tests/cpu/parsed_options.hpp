#pragma once
#include <string>
#include <vector>

#include "cli/options.hpp"

namespace attn::testing {

// parse_options on a command line of strings (the program's name is added).
inline options parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "attn-tune");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  options o;
  parse_options(static_cast<int>(argv.size()), argv.data(), o);
  return o;
}

}  // namespace attn::testing
