#pragma once
#include <gtest/gtest.h>

#include <string>

#include "core/problem.hpp"

namespace attn::testing {

// The message of the invalid_input that f throws, so tests can check it names the bad value.
template <class F>
std::string invalid_input_message(F&& f) {
  try {
    f();
  } catch (const attn::invalid_input& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected attn::invalid_input";
  return "";
}

}  // namespace attn::testing
