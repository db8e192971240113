// Backend plugins: loading, checking and the runtime adapter.
#include "runtime/backend_plugin.h"

#include <dlfcn.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <mutex>

#include "kiln/runtime/backend.h"
#include "kiln/runtime/error.h"

namespace kiln {

namespace {

constexpr size_t kErrorSize = 1024;

std::mutex& plugins_mutex() {
  static std::mutex mu;
  return mu;
}

std::vector<std::unique_ptr<LoadedBackendPlugin>>& plugins() {
  static std::vector<std::unique_ptr<LoadedBackendPlugin>> loaded;
  return loaded;
}

bool is_identifier(const char* s) {
  if (!s || !*s) return false;
  for (const char* c = s; *c; ++c)
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '_')) return false;
  return true;
}

kiln_plugin_tensor plugin_tensor(const std::string& name, const Tensor& t) {
  return {name.c_str(),     const_cast<void*>(t.raw()), static_cast<kiln_dtype>(t.dtype()),
          t.shape().size(), t.shape().data(),           t.nbytes()};
}

// A plugin's runtime as a BackendRuntime: one plugin state per loaded module.
class PluginRuntime : public BackendRuntime {
 public:
  explicit PluginRuntime(const kiln_backend_plugin* p) : p_(p) {}
  ~PluginRuntime() override {
    if (state_) p_->runtime_destroy(state_);
  }
  std::string name() const override { return p_->name; }

  Status init(const std::vector<BackendFunction>& functions, const std::map<std::string, Tensor>& constants,
              const std::map<std::string, std::string>& options) override {
    std::vector<kiln_plugin_function> fns;
    for (const auto& f : functions) fns.push_back({f.symbol.c_str(), f.artifact.data(), f.artifact.size()});
    std::vector<kiln_plugin_tensor> consts;  // names point into the map's keys
    for (const auto& [name, t] : constants) consts.push_back(plugin_tensor(name, t));
    std::vector<kiln_plugin_option> opts;
    for (const auto& [k, v] : options) opts.push_back({k.c_str(), v.c_str()});
    char error[kErrorSize] = {};
    if (p_->runtime_create(fns.data(), fns.size(), consts.data(), consts.size(), opts.data(), opts.size(),
                           &state_, error, sizeof error) != 0)
      return Status::error(std::string(p_->name) + " plugin: runtime_create failed: " + error);
    return Status::success();
  }

  Status run(const std::string& symbol, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
             std::vector<DispatchEvent>* events, const NodeObserver&) override {
    static const std::string kNoName;
    std::vector<kiln_plugin_tensor> ins, outs;
    for (const auto& t : inputs) ins.push_back(plugin_tensor(kNoName, t));
    for (auto& t : outputs) outs.push_back(plugin_tensor(kNoName, t));
    char error[kErrorSize] = {};
    if (p_->runtime_run(state_, symbol.c_str(), ins.data(), ins.size(), outs.data(), outs.size(), error,
                        sizeof error) != 0)
      return Status::error(std::string(p_->name) + " plugin: " + symbol + ": " + error);
    if (events) {
      DispatchEvent e;
      e.backend = p_->name;
      e.function = symbol;
      e.node = symbol;
      e.op = "plugin";
      e.engine = "PLUGIN";
      events->push_back(std::move(e));
    }
    return Status::success();
  }

 private:
  const kiln_backend_plugin* p_;
  void* state_ = nullptr;
};

// Every refusal of a description, before anything is registered.
void check_description(const kiln_backend_plugin* p, const std::string& what) {
  KILN_CHECK(p != nullptr, what, ": ", KILN_BACKEND_PLUGIN_ENTRY_POINT,
             " returned NULL (the plugin refused to load)");
  KILN_CHECK(p->abi_version == KILN_BACKEND_PLUGIN_ABI_VERSION, what,
             ": the plugin was built for backend plugin ABI ", p->abi_version,
             ", but this kiln implements ABI ", KILN_BACKEND_PLUGIN_ABI_VERSION,
             "; rebuild it against this kiln's <kiln/backend_plugin.h>");
  KILN_CHECK(p->struct_size >= KILN_BACKEND_PLUGIN_V1_MIN_SIZE, what, ": the plugin's description is ",
             p->struct_size, " bytes, smaller than ABI ", KILN_BACKEND_PLUGIN_ABI_VERSION, "'s ",
             KILN_BACKEND_PLUGIN_V1_MIN_SIZE, "; rebuild it against this kiln's <kiln/backend_plugin.h>");
  KILN_CHECK(is_identifier(p->name), what, ": the backend name '", p->name ? p->name : "(null)",
             "' is not an identifier (letters, digits and '_')");
  std::string missing;
  auto need = [&](const void* fn, const char* field) {
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(field);
  };
  need(reinterpret_cast<const void*>(p->codegen), "codegen");
  need(reinterpret_cast<const void*>(p->free_bytes), "free_bytes");
  need(reinterpret_cast<const void*>(p->runtime_create), "runtime_create");
  need(reinterpret_cast<const void*>(p->runtime_run), "runtime_run");
  need(reinterpret_cast<const void*>(p->runtime_destroy), "runtime_destroy");
  KILN_CHECK(missing.empty(), what, ": backend ", p->name, " leaves callbacks NULL: ", missing);
  KILN_CHECK(p->num_patterns == 0 || p->patterns, what, ": backend ", p->name, " has ", p->num_patterns,
             " patterns but no pattern array");
  for (const auto& have : plugins())
    KILN_CHECK(have->name() != p->name, what, ": backend '", p->name, "' is already loaded from plugin ",
               have->path);
  for (const auto& have : backend_runtime_names())
    KILN_CHECK(have != p->name, what, ": backend '", p->name,
               "' is already registered (a built-in backend); a plugin needs a name of its own");
}

}  // namespace

const LoadedBackendPlugin& load_backend_plugin(const std::string& path) {
  std::lock_guard<std::mutex> lock(plugins_mutex());
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  for (const auto& have : plugins())
    if (have->path == canonical) return *have;
  std::string what = "plugin " + path;
  KILN_CHECK(std::filesystem::exists(path, ec), what, ": no such file");
  // RTLD_LOCAL: two plugins' symbols never mix; the entry point is looked up by handle.
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error(what + ": cannot load it: " + dlerror());
  auto entry = reinterpret_cast<kiln_backend_plugin_entry_fn>(dlsym(handle, KILN_BACKEND_PLUGIN_ENTRY_POINT));
  if (!entry) {
    bool other = dlsym(handle, "kiln_backend_plugin_v2") != nullptr;
    dlclose(handle);
    throw Error(what + ": no " + KILN_BACKEND_PLUGIN_ENTRY_POINT + " entry point" +
                (other
                     ? " (it exports kiln_backend_plugin_v2: it was built for a newer kiln)"
                     : "; is it a kiln backend plugin? (a plugin exports it, see <kiln/backend_plugin.h>)"));
  }
  const kiln_backend_plugin* p = entry(KILN_BACKEND_PLUGIN_ABI_VERSION);
  try {
    check_description(p, what);
  } catch (...) {
    dlclose(handle);
    throw;
  }
  auto loaded = std::make_unique<LoadedBackendPlugin>();
  loaded->path = canonical;
  loaded->plugin = p;
  // The library stays loaded for the process: registered callbacks point into it.
  register_backend_runtime(p->name, [p] { return std::make_unique<PluginRuntime>(p); });
  plugins().push_back(std::move(loaded));
  return *plugins().back();
}

std::vector<const LoadedBackendPlugin*> loaded_backend_plugins() {
  std::lock_guard<std::mutex> lock(plugins_mutex());
  std::vector<const LoadedBackendPlugin*> out;
  for (const auto& p : plugins()) out.push_back(p.get());
  return out;
}

}  // namespace kiln
