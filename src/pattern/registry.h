// The pattern registry: every pattern a backend claims, by unique name.
//
// An entry is named "<backend>.<pattern>" (the backend part has no '.'), has
// a pattern, an optional check on the match and an explicit priority. When
// patterns compete for one op, the higher priority claims it first; equal
// priorities go by registration order. Registering a name again replaces the
// entry (keeping its place in the registration order). Lookups by backend
// compare the backend name exactly, so "my_npu" never lists
// "my_npu2.*".
//
// A backend's entries come with its Backend object (register_backend in
// src/backends/registry.h), never from static initialisers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pattern/pattern.h"

namespace kiln {

// A backend's options (`--option backend.key=value`), the same its codegen
// gets, so a check judges a match against the configured device.
using BackendOptions = std::map<std::string, std::string>;

// Accepts a match (nullopt) or rejects it with a reason for --explain:
// "dtype int32 is not supported (int8, float32)".
using PatternCheck = std::function<std::optional<std::string>(const Match&, const BackendOptions&)>;

struct PatternEntry {
  std::string name;  // "<backend>.<pattern>"
  Pattern pattern;
  PatternCheck check;  // may be empty: accept every match
  int priority = 0;
  std::string description;  // one line for listings

  std::string backend() const { return name.substr(0, name.find('.')); }
  std::string short_name() const { return name.substr(name.find('.') + 1); }
  std::vector<std::string> annotations() const { return pattern_annotations(pattern); }
};

class PatternRegistry {
 public:
  // Throws kiln::Error on a malformed name or a null pattern.
  void add(PatternEntry entry);
  // Removes every entry of a backend (tests register and drop backends).
  void remove_backend(const std::string& backend);

  const PatternEntry* find(const std::string& name) const;
  // Entries of one backend (exact name), by priority then registration order.
  std::vector<const PatternEntry*> for_backend(const std::string& backend) const;
  // Entries of several backends merged into one claim order: by priority,
  // then the order of `backends` (the first listed wins a tie).
  std::vector<const PatternEntry*> for_backends(const std::vector<std::string>& backends) const;
  // Backend names with at least one entry, in first-registration order.
  std::vector<std::string> backends() const;
  const std::vector<PatternEntry>& entries() const { return entries_; }

 private:
  std::vector<PatternEntry> entries_;  // registration order
};

// The process-wide registry: every registered backend's patterns. Kept by
// the backend registry (src/backends/registry.cc), whose first use
// registers the built-in backends.
PatternRegistry& pattern_registry();

}  // namespace kiln
