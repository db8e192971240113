// Small helpers the unit tests share.
#pragma once

#include <functional>
#include <string>

#include "kiln/runtime/error.h"

namespace kiln::testing {

// The message of the kiln::Error `fn` throws, or "no error".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// How many calls of `op` printed IR text holds (`op(` occurrences).
inline int count_calls(const std::string& printed, const std::string& op) {
  int n = 0;
  for (size_t at = printed.find(op + "("); at != std::string::npos; at = printed.find(op + "(", at + 1)) ++n;
  return n;
}

}  // namespace kiln::testing
