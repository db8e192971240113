// kiln error values.
//
// Every error a user can cause (bad text, bad files, wrong shapes, unknown
// ops, missing symbols, an exhausted scratchpad) is reported as a kiln::Error:
// a message and, where there is one, a source location. Errors are thrown as
// this type and caught at the boundary (the `kiln` tool, the C ABI, tests);
// nothing in kiln calls abort() on user input.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

// A position in a source file; line and column are 1-based, 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  bool known() const { return line > 0; }
  std::string str() const;  // "file:line:col", or "" when unknown
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, SourceLoc loc = {}, std::string context = {});

  // The message without the location prefix.
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  // Optional extra lines (for a parse error: the offending line and a caret).
  const std::string& context() const { return context_; }

 private:
  std::string message_;
  SourceLoc loc_;
  std::string context_;
};

// Throws kiln::Error with a formatted message when `cond` is false. For checks
// of user input only; internal invariants use KILN_ASSERT.
#define KILN_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__)); \
  } while (0)

// Internal invariant: a bug in kiln, not in the input. Reported as an Error
// too (so tools never crash), tagged as an internal error.
#define KILN_ASSERT(cond, msg)                                                                            \
  do {                                                                                                    \
    if (!(cond))                                                                                          \
      throw ::kiln::Error(std::string("internal error: ") + (msg) + " (" #cond ") at " + __FILE__ + ":" + \
                          std::to_string(__LINE__));                                                      \
  } while (0)

namespace detail {
std::string concat_impl(std::initializer_list<std::string> parts);
template <typename... Ts>
std::string concat(const Ts&... parts) {
  auto to_s = [](const auto& v) -> std::string {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, char> && !std::is_same_v<V, bool>)
      return std::to_string(v);
    else if constexpr (std::is_same_v<V, bool>)
      return v ? "true" : "false";
    else
      return std::string(v);
  };
  return concat_impl({to_s(parts)...});
}
}  // namespace detail

}  // namespace kiln
