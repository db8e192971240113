// Loading backend plugins (include/kiln/backend_plugin.h): the runtime side.
//
// load_backend_plugin dlopens a plugin, finds its versioned entry point,
// checks the description it returns (ABI version, struct size, name,
// callbacks, a name no other backend has) and registers its backend runtime;
// the compiler side (patterns, codegen) registers from the description
// (tools/kiln/plugins.cc). Every refusal is a kiln::Error naming the file.
//
// A plugin's artifact is its codegen's bytes, whatever format it chose
// (BackendFunction::artifact); the function's kiln.graph travels beside it
// (BackendFunction::graph) for --verify and for the constants it reads.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/backend_plugin.h"

namespace kiln {

struct LoadedBackendPlugin {
  std::string path;
  const kiln_backend_plugin* plugin = nullptr;
  std::string name() const { return plugin->name; }
  // The declared options, or nullptr when the plugin declares none (a
  // description older than the options fields, or options NULL).
  const kiln_plugin_option_decl* options() const {
    bool has = plugin->struct_size >= offsetof(kiln_backend_plugin, num_options) + sizeof(size_t);
    return has ? plugin->options : nullptr;
  }
};

// Loads (once per path) and registers the plugin's runtime. Throws kiln::Error.
const LoadedBackendPlugin& load_backend_plugin(const std::string& path);
// The plugins loaded so far, in load order.
std::vector<const LoadedBackendPlugin*> loaded_backend_plugins();

}  // namespace kiln
