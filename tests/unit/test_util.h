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

}  // namespace kiln::testing
