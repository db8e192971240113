// The compiler side of a backend plugin: its patterns and its codegen.
#include "plugins.h"

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "backends/graph_codegen.h"
#include "backends/registry.h"
#include "kiln/runtime/error.h"
#include "pattern/registry.h"
#include "runtime/backend_plugin.h"

namespace kiln::cli {
namespace {

constexpr size_t kErrorSize = 1024;

static_assert(static_cast<int>(OptionType::String) == KILN_OPTION_STRING &&
                  static_cast<int>(OptionType::Int) == KILN_OPTION_INT &&
                  static_cast<int>(OptionType::Size) == KILN_OPTION_SIZE &&
                  static_cast<int>(OptionType::Choice) == KILN_OPTION_CHOICE &&
                  static_cast<int>(OptionType::File) == KILN_OPTION_FILE,
              "the plugin ABI's option types are kiln's, by number");

nlohmann::json type_json(const Type& t) {
  if (!t || !t->is_tensor()) return nullptr;
  return {{"shape", t->tensor.shape}, {"dtype", std::string(dtype_name(t->tensor.dtype))}};
}

std::vector<kiln_plugin_option> option_array(const std::map<std::string, std::string>& options) {
  std::vector<kiln_plugin_option> out;
  for (const auto& [k, v] : options) out.push_back({k.c_str(), v.c_str()});
  return out;
}

PatternCheck check_of(const kiln_backend_plugin* p, const kiln_plugin_pattern& pat) {
  if (!pat.check) return {};
  std::string name = pat.name, op = pat.op;
  kiln_plugin_check_fn check = pat.check;
  return [name, op, check](const Match& m, const BackendOptions& options) -> std::optional<std::string> {
    const CallNode* c = m.find_call(op);
    if (!c) return "internal: the match has no " + op + " call";
    nlohmann::json j{{"op", op}, {"inputs", nlohmann::json::array()}, {"output", type_json(c->type)}};
    for (const auto& a : c->args) j["inputs"].push_back(type_json(a->type));
    std::string text = j.dump();
    auto opts = option_array(options);
    char reason[kErrorSize] = {};
    if (check(name.c_str(), text.c_str(), opts.data(), opts.size(), reason, sizeof reason) == 0)
      return std::nullopt;
    return reason[0] ? std::string(reason) : std::string("rejected by the plugin's check");
  };
}

BackendArtifacts plugin_codegen(const kiln_backend_plugin* p, const Module& m,
                                const std::vector<Function>& functions, const CodegenOptions& options) {
  BackendArtifacts out;
  GraphLowering state;
  auto opts = option_array(options);
  for (const auto& f : functions) {
    std::string symbol = f->attrs.get_string("global_symbol");
    Graph g = lower_to_graph(m, *f, symbol, state);
    std::string text = graph_to_json(g);
    kiln_plugin_bytes bytes{nullptr, 0};
    char error[kErrorSize] = {};
    if (p->codegen(symbol.c_str(), text.c_str(), opts.data(), opts.size(), &bytes, error, sizeof error) != 0)
      throw Error(std::string(p->name) + " plugin codegen of @" + f->name + ": " + error);
    // The plugin's own bytes are the artifact; the build keeps the function's
    // kiln.graph beside it for --verify (BackendFunction::graph).
    out.artifacts[symbol] = std::string(bytes.data ? bytes.data : "", bytes.size);
    p->free_bytes(&bytes);
  }
  for (auto& [name, t] : state.constants) out.constants[name] = t;
  return out;
}

void register_compiler_side(const LoadedBackendPlugin& loaded) {
  const kiln_backend_plugin* p = loaded.plugin;
  Backend b;
  b.name = p->name;
  if (find_backend(b.name)) return;  // this plugin, loaded already
  b.version = p->version ? p->version : "";
  b.description = std::string(p->description ? p->description : "") + " (plugin " + loaded.path + ")";
  for (size_t i = 0; i < p->num_patterns; ++i) {
    const kiln_plugin_pattern& pat = p->patterns[i];
    std::string what = "plugin " + loaded.path + ": pattern " + std::to_string(i);
    KILN_CHECK(pat.name && pat.op, what, " has no name or no op");
    std::vector<Pattern> inputs;
    for (uint32_t k = 0; k < pat.num_inputs; ++k) inputs.push_back(annotate("input", wildcard()));
    b.patterns.push_back(PatternEntry{b.name + "." + pat.name,
                                      annotate("root", is_op(pat.op, std::move(inputs))), check_of(p, pat),
                                      pat.priority, pat.description ? pat.description : ""});
  }
  b.codegen = [p](const Module& m, const std::vector<Function>& fns, const CodegenOptions& o) {
    return plugin_codegen(p, m, fns, o);
  };
  b.options_declared = loaded.options() != nullptr;
  for (size_t i = 0; b.options_declared && i < p->num_options; ++i) {
    const kiln_plugin_option_decl& d = loaded.options()[i];
    std::string what = "plugin " + loaded.path + ": option " + std::to_string(i);
    KILN_CHECK(d.name && *d.name, what, " has no name");
    KILN_CHECK(d.type <= KILN_OPTION_FILE, what, " (", d.name, ") has an unknown type ", d.type);
    BackendOption o{d.name, static_cast<OptionType>(d.type), d.default_value ? d.default_value : "",
                    d.description ? d.description : ""};
    for (std::string rest = d.choices ? d.choices : ""; !rest.empty();) {
      size_t bar = rest.find('|');
      o.choices.push_back(rest.substr(0, bar));
      rest = bar == std::string::npos ? "" : rest.substr(bar + 1);
    }
    KILN_CHECK(o.type != OptionType::Choice || !o.choices.empty(), what, " (", d.name,
               ") is a choice without choices");
    if (!o.default_value.empty()) check_option_value(b.name, o, o.default_value);
    b.options.push_back(std::move(o));
  }
  // The runtime was registered by load_backend_plugin (the runtime library's loader).
  register_backend(std::move(b));
}

void load_one(const std::string& path) { register_compiler_side(load_backend_plugin(path)); }

}  // namespace

std::vector<char*> load_plugins(int argc, char** argv) {
  if (const char* env = std::getenv("KILN_PLUGIN_PATH"); env && *env) {
    std::string list = env;
    for (size_t at = 0; at <= list.size();) {
      size_t end = list.find(':', at);
      if (end == std::string::npos) end = list.size();
      if (end > at) load_one(list.substr(at, end - at));
      at = end + 1;
    }
  }
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--plugin") == 0) {
      KILN_CHECK(i + 1 < argc, "--plugin needs a file: --plugin path/libmy_backend.so");
      load_one(argv[++i]);
      continue;
    }
    if (i > 0 && std::strncmp(argv[i], "--plugin=", 9) == 0) {
      load_one(argv[i] + 9);
      continue;
    }
    rest.push_back(argv[i]);
  }
  rest.push_back(nullptr);
  return rest;
}

}  // namespace kiln::cli
