// The backend registry: one Backend per name, the built-ins registered from
// their one list (backends/builtin.h) on first use.
#include "backends/registry.h"

#include <algorithm>
#include <mutex>

#include "backends/builtin.h"
#include "runtime/module_file.h"  // kKilnVersion: the built-ins' version
#include "transform/partition.h"

#define KILN_DECLARE_BACKEND(name)                \
  namespace kiln::name {                          \
  Backend backend();                              \
  std::unique_ptr<BackendRuntime> make_runtime(); \
  }
KILN_FOR_EACH_BUILTIN_BACKEND(KILN_DECLARE_BACKEND)
#undef KILN_DECLARE_BACKEND

namespace kiln {
namespace {

std::vector<Backend>& backends() {
  static std::vector<Backend> list;
  return list;
}

PatternRegistry& patterns() {
  static PatternRegistry registry;
  return registry;
}

void add_backend(Backend b) {
  KILN_CHECK(!b.name.empty() && b.name.find('.') == std::string::npos, "backend name '", b.name,
             "' must be an identifier");
  KILN_CHECK(b.codegen != nullptr, "backend ", b.name, " has no codegen");
  for (const auto& p : b.patterns)
    KILN_CHECK(p.backend() == b.name, "backend ", b.name, ": pattern ", p.name, " must be named ", b.name,
               ".<pattern>");
  for (const auto& o : b.options)
    KILN_CHECK(o.type != OptionType::Choice || !o.choices.empty(), "backend ", b.name, ": option ", o.name,
               " is a choice without choices");
  patterns().remove_backend(b.name);
  for (const auto& p : b.patterns) patterns().add(p);
  if (b.runtime) register_backend_runtime(b.name, b.runtime);
  for (auto& have : backends())
    if (have.name == b.name) {
      have = std::move(b);
      return;
    }
  backends().push_back(std::move(b));
}

void register_builtins() {
// A built-in's runtime is also in the runtime library's list
// (builtin_runtimes.cc); registering it again is the same factory.
#define KILN_REGISTER_BACKEND(name)                  \
  {                                                  \
    Backend b = name::backend();                     \
    if (b.version.empty()) b.version = kKilnVersion; \
    b.runtime = [] { return name::make_runtime(); }; \
    add_backend(std::move(b));                       \
  }
  KILN_FOR_EACH_BUILTIN_BACKEND(KILN_REGISTER_BACKEND)
#undef KILN_REGISTER_BACKEND
}

void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, register_builtins);
}

std::string type_name(const BackendOption& o) {
  switch (o.type) {
    case OptionType::String:
      return "TEXT";
    case OptionType::Int:
      return "INT";
    case OptionType::Size:
      return "SIZE";
    case OptionType::File:
      return "FILE";
    case OptionType::Choice: {
      std::string s;
      for (const auto& c : o.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
  }
  return "?";
}

std::string known_options(const Backend& b) {
  std::string s;
  for (const auto& o : b.options) s += (s.empty() ? "" : ", ") + o.name + "=" + type_name(o);
  return s.empty() ? "none" : s;
}

bool is_int(const std::string& v) {
  size_t i = (!v.empty() && v[0] == '-') ? 1 : 0;
  if (i == v.size()) return false;
  for (; i < v.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  return v.size() < 19;
}

bool is_size(const std::string& v) {
  std::string digits = v;
  if (!digits.empty() && std::string("KkMm").find(digits.back()) != std::string::npos) digits.pop_back();
  return is_int(digits) && digits[0] != '-' && std::stoll(digits) > 0;
}

}  // namespace

PatternRegistry& pattern_registry() {
  ensure_builtins();
  return patterns();
}

void register_backend(Backend backend) {
  ensure_builtins();
  add_backend(std::move(backend));
}

void unregister_backend(const std::string& name) {
  ensure_builtins();
  patterns().remove_backend(name);
  std::erase_if(backends(), [&](const Backend& b) { return b.name == name; });
}

const Backend* find_backend(const std::string& name) {
  ensure_builtins();
  for (const auto& b : backends())
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<const Backend*> registered_backend_list() {
  ensure_builtins();
  std::vector<const Backend*> out;
  for (const auto& b : backends()) out.push_back(&b);
  return out;
}

std::string registered_backends() {
  // Python backends add patterns without a Backend: the pattern registry
  // knows every name.
  std::string names;
  for (const auto& b : pattern_registry().backends()) names += (names.empty() ? "" : ", ") + b;
  return names;
}

void check_option_value(const std::string& backend, const BackendOption& decl, const std::string& value) {
  std::string what = backend + " option " + decl.name + "=" + value + ": ";
  switch (decl.type) {
    case OptionType::String:
    case OptionType::File:
      return;
    case OptionType::Int:
      if (!is_int(value)) throw Error(what + "expected an integer");
      return;
    case OptionType::Size:
      if (!is_size(value)) throw Error(what + "expected a positive size such as 4096, 4K or 1M");
      return;
    case OptionType::Choice: {
      if (std::find(decl.choices.begin(), decl.choices.end(), value) != decl.choices.end()) return;
      std::string list;
      for (size_t i = 0; i < decl.choices.size(); ++i)
        list += (i == 0 ? "" : i + 1 == decl.choices.size() ? " or " : ", ") + decl.choices[i];
      throw Error(what + "expected " + list);
    }
  }
}

CodegenOptions with_defaults(const Backend& backend, const CodegenOptions& options) {
  CodegenOptions out = options;
  for (const auto& o : backend.options)
    if (!o.default_value.empty()) out.emplace(o.name, o.default_value);
  return out;
}

std::vector<std::string> describe_options(const Backend& backend) {
  std::vector<std::string> out;
  for (const auto& o : backend.options)
    out.push_back(o.name + "=" + type_name(o) +
                  (o.default_value.empty() ? "" : " (default " + o.default_value + ")") + ": " +
                  o.description);
  return out;
}

void add_codegen_option(RunCodegenOptions& o, const std::string& key, const std::string& value,
                        const std::vector<std::string>& backends, const std::string& flag,
                        const std::string& not_given) {
  size_t dot = key.find('.');
  if (dot == std::string::npos) {
    o.global[key] = value;
    return;
  }
  // The keys are checked against the backend's declarations
  // (check_codegen_options); a backend name that matches none would
  // otherwise be ignored without a word.
  std::string backend = key.substr(0, dot);
  if (pattern_registry().for_backend(backend).empty())
    throw Error(flag + ": unknown backend '" + backend + "' (registered: " + registered_backends() + ")");
  if (std::find(backends.begin(), backends.end(), backend) == backends.end())
    throw Error(flag + ": " + backend + " " + not_given);
  o.backend[backend][key.substr(dot + 1)] = value;
}

void check_codegen_options(const RunCodegenOptions& o, const std::vector<std::string>& backends) {
  for (const auto& name : backends) {
    const Backend* b = find_backend(name);
    if (!b) continue;
    CodegenOptions given = o.for_backend(name);
    if (b->options_declared)
      for (const auto& [key, value] : given) {
        auto decl = std::find_if(b->options.begin(), b->options.end(),
                                 [&](const BackendOption& d) { return d.name == key; });
        if (decl == b->options.end())
          throw Error(name + ": unknown option '" + key + "' (" + name + " takes " + known_options(*b) + ")");
        check_option_value(name, *decl, value);
      }
    if (b->check_options) b->check_options(given);
  }
}

void register_backend_codegen(BackendCodegen codegen) {
  KILN_CHECK(!codegen.backend.empty() && codegen.codegen, "backend codegen needs a name and a function");
  ensure_builtins();
  Backend b{codegen.backend, "", codegen.description,   {},   {},
            codegen.codegen, {}, codegen.check_options, false};
  for (auto& have : backends())
    if (have.name == b.name) {
      have = std::move(b);
      return;
    }
  backends().push_back(std::move(b));
}

void remove_backend_codegen(const std::string& backend) {
  ensure_builtins();
  std::erase_if(backends(), [&](const Backend& b) { return b.name == backend; });
}

}  // namespace kiln
