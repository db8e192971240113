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

// How many times `what` occurs in `text` (overlaps counted).
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// How many calls of `op` printed IR text holds (`op(` occurrences).
inline int count_calls(const std::string& printed, const std::string& op) {
  return count_of(printed, op + "(");
}

// The IR a compile's --print-after-all log shows after `pass` (up to the
// next "# IR after"); empty when the pass changed nothing, so printed none.
inline std::string ir_after(const std::string& printed, const std::string& pass) {
  const size_t at = printed.find("# IR after " + pass);
  if (at == std::string::npos) return "";
  return printed.substr(at, printed.find("# IR after", at + 1) - at);
}

}  // namespace kiln::testing
