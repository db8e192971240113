// The pattern registry: unique names, numeric priorities, exact backend lookup.
#include "pattern/registry.h"

#include <algorithm>

#include "ir/stable_sort.h"

namespace kiln {

static bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

void PatternRegistry::add(PatternEntry entry) {
  size_t dot = entry.name.find('.');
  KILN_CHECK(dot != std::string::npos && is_identifier(entry.name.substr(0, dot)) &&
                 is_identifier(entry.name.substr(dot + 1)),
             "pattern name '", entry.name,
             "' must be <backend>.<pattern> with letters, digits and '_' in each part");
  KILN_CHECK(entry.pattern != nullptr, "pattern ", entry.name, " has no pattern");
  for (auto& e : entries_) {
    if (e.name != entry.name) continue;
    e = std::move(entry);
    return;
  }
  entries_.push_back(std::move(entry));
}

void PatternRegistry::remove_backend(const std::string& backend) {
  std::erase_if(entries_, [&](const PatternEntry& e) { return e.backend() == backend; });
}

const PatternEntry* PatternRegistry::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<const PatternEntry*> PatternRegistry::for_backends(
    const std::vector<std::string>& backends) const {
  std::vector<const PatternEntry*> out;
  for (const auto& e : entries_)
    if (std::find(backends.begin(), backends.end(), e.backend()) != backends.end()) out.push_back(&e);
  // On equal priorities the backend listed first wins (--backend
  // a,b: a wins); stable_sort keeps registration order within one backend.
  auto rank = [&](const PatternEntry* e) {
    return std::find(backends.begin(), backends.end(), e->backend()) - backends.begin();
  };
  kiln::stable_sort(out, [&](const PatternEntry* a, const PatternEntry* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return rank(a) < rank(b);
  });
  return out;
}

std::vector<const PatternEntry*> PatternRegistry::for_backend(const std::string& backend) const {
  return for_backends({backend});
}

std::vector<std::string> PatternRegistry::backends() const {
  std::vector<std::string> out;
  for (const auto& e : entries_)
    if (std::find(out.begin(), out.end(), e.backend()) == out.end()) out.push_back(e.backend());
  return out;
}

}  // namespace kiln
