// Checks of numeric flags, with messages that say what is expected.
// CLI11 alone reads "-1" into an unsigned option as 2^64 - 1, clamps larger
// numbers to it, and CLI::NonNegativeNumber's message prints DBL_MAX in full.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <string>

namespace kiln::cli {

// A number >= 0 (what is not a number at all, the option's conversion reports).
inline const CLI::Validator kNonNegative(
    [](std::string& s) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v) || v >= 0) return "";
      return "expected a number >= 0, got " + s;
    },
    "NONNEGATIVE");

// A whole number that fits 64 bits unsigned.
inline const CLI::Validator kUnsigned64(
    [](std::string& s) -> std::string {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        return "expected a whole number from 0 to 18446744073709551615, got " + s;
      return "";
    },
    "UINT64");

}  // namespace kiln::cli
