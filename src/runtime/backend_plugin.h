// Loading backend plugins (include/kiln/backend_plugin.h): the runtime side.
//
// load_backend_plugin dlopens a plugin, finds its versioned entry point,
// checks the description it returns (ABI version, struct size, name,
// callbacks, a name no other backend has) and registers its backend runtime;
// the compiler side (patterns, codegen) registers from the description
// (tools/kiln/plugins.cc). Every refusal is a kiln::Error naming the file.
//
// A plugin's artifact travels in the .kmod as a uint8 constant named
// plugin_artifact_name(symbol), listed among the constants of the function's
// kiln.graph (the artifact the VM reads), so the runtime gets it back at init
// whatever format the plugin chose.
#pragma once

#include <string>
#include <vector>

#include "kiln/backend_plugin.h"

namespace kiln {

struct LoadedBackendPlugin {
  std::string path;
  const kiln_backend_plugin* plugin = nullptr;
  std::string name() const { return plugin->name; }
};

// Loads (once per path) and registers the plugin's runtime. Throws kiln::Error.
const LoadedBackendPlugin& load_backend_plugin(const std::string& path);
// The plugins loaded so far, in load order.
std::vector<const LoadedBackendPlugin*> loaded_backend_plugins();

std::string plugin_artifact_name(const std::string& symbol);

}  // namespace kiln
