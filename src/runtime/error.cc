#include "kiln/runtime/error.h"

namespace kiln {

std::string SourceLoc::str() const {
  if (!known()) return file;
  std::string s = file.empty() ? "<input>" : file;
  s += ":" + std::to_string(line);
  if (column > 0) s += ":" + std::to_string(column);
  return s;
}

static std::string full_text(const std::string& message, const SourceLoc& loc, const std::string& context) {
  std::string s;
  if (loc.known()) s = loc.str() + ": ";
  s += message;
  if (!context.empty()) s += "\n" + context;
  return s;
}

Error::Error(std::string message, SourceLoc loc, std::string context)
    : std::runtime_error(full_text(message, loc, context)),
      message_(std::move(message)),
      loc_(std::move(loc)),
      context_(std::move(context)) {}

namespace detail {
std::string concat_impl(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}
}  // namespace detail

}  // namespace kiln
