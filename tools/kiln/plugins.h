// `kiln --plugin FILE.so` and KILN_PLUGIN_PATH: backend plugins
// (include/kiln/backend_plugin.h) loaded before the command runs.
#pragma once

#include <vector>

namespace kiln::cli {

// Loads every plugin of KILN_PLUGIN_PATH (':'-separated) and of each
// `--plugin FILE` / `--plugin=FILE` in argv (anywhere on the line), registers
// their runtimes, patterns and codegens, and returns argv without the
// --plugin arguments. Throws kiln::Error naming the plugin that is refused.
std::vector<char*> load_plugins(int argc, char** argv);

}  // namespace kiln::cli
