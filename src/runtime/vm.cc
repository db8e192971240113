// The VM: host program on reference kernels, offloaded functions on backends.
#include "runtime/vm.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <tuple>

#include "kiln/runtime/backend_api.h"

#include "runtime/graph_exec.h"

namespace kiln {

std::string RegionCheck::str() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "max abs %.3g, max rel %.3g", max_abs, max_rel);
  std::string s =
      (host_kernel ? "verify host kernel " + symbol : "verify @" + symbol + " (" + backend + ")") + ": " +
      buf + (ok ? ": ok" : ": MISMATCH");
  if (!ok && !first_divergent_node.empty()) {
    std::snprintf(buf, sizeof buf, "%.3g", node_max_abs);
    s += "; first divergent node: " + first_divergent_node + " (max abs " + buf + ")";
  }
  return s;
}

VirtualMachine::VirtualMachine(Executable exe) : exe_(std::move(exe)) {
  for (const auto& part : exe_.backends) {
    std::unique_ptr<BackendRuntime> rt = make_backend_runtime(part.backend);
    if (!rt) {
      std::string known;
      for (const auto& n : backend_runtime_names()) known += (known.empty() ? "" : ", ") + n;
      std::string version = part.version.empty() ? "" : " version " + part.version;
      throw Error("module needs backend runtime '" + part.backend +
                  "', which this runtime does not have (it has: " + known +
                  "); if it is a plugin backend, load the plugin that provides " + part.backend + version +
                  ": kiln --plugin path/lib" + part.backend + ".so, KILN_PLUGIN_PATH=path/lib" +
                  part.backend + ".so, or kiln_load_backend_plugin() in the C API");
    }
    std::map<std::string, Tensor> constants;
    for (const auto& name : part.constants) {
      auto it = exe_.constants.find(name);
      KILN_CHECK(it != exe_.constants.end(), "module: constant '", name, "' of backend ", part.backend,
                 " is missing");
      constants[name] = it->second;
    }
    for (const auto& f : part.functions) {
      Graph g =
          graph_from_json(f.graph.empty() ? f.artifact : f.graph, part.backend + " function " + f.symbol);
      for (const auto& c : g.constants) {
        auto it = exe_.constants.find(c.name);
        KILN_CHECK(it != exe_.constants.end(), "module: constant '", c.name, "' of ", f.symbol,
                   " is missing");
        constants[c.name] = it->second;
      }
      KILN_CHECK(!symbols_.count(f.symbol), "module: symbol '", f.symbol, "' is defined twice");
      symbols_[f.symbol] = {part.backend, std::move(g)};
    }
    Status s = rt->init(part.functions, constants, part.options);
    if (!s.ok()) throw Error("backend " + part.backend + ": init failed: " + s.message);
    runtimes_[part.backend] = std::move(rt);
  }
  if (exe_.memory.arena_bytes > 0)
    checked_tensor_bytes({exe_.memory.arena_bytes}, DType::UInt8, "module: the arena of intermediate values");
  if (!exe_.host_code.empty()) {
    host_code_ = LoadedHostCode::load(exe_.host_code, "module");
    for (const auto& k : exe_.host_code.kernels) kernels_[k.symbol] = {host_code_->find(k.symbol), &k};
  }
  for (const auto& n : exe_.host.nodes) {
    KILN_CHECK(n.callee.empty() || symbols_.count(n.callee), "module: the host program calls '", n.callee,
               "', which no backend defines");
    KILN_CHECK(n.kernel.empty() || kernels_.count(n.kernel), "module: the host program calls kernel '",
               n.kernel, "', which its host code does not define");
  }
  plan_host_program();
  if (exe_.memory.arena_bytes > 0) free_arenas_.push_back(new_arena());
}

void VirtualMachine::plan_host_program() {
  const Graph& g = exe_.host;
  std::map<std::string, size_t> slot;  // by value name
  auto add = [&](const std::string& name, const GraphValue* value) {
    KILN_CHECK(!slot.count(name), "module: the host program defines '", name, "' twice");
    auto planned = value ? exe_.memory.offsets.find(name) : exe_.memory.offsets.end();
    plan_.values.push_back(value);
    plan_.arena_offsets.push_back(planned == exe_.memory.offsets.end() ? -1 : planned->second);
    return slot[name] = plan_.values.size() - 1;
  };
  auto find = [&](const std::string& name, const std::string& where) {
    auto it = slot.find(name);
    KILN_CHECK(it != slot.end(), "module: ", where, " '", name,
               "', which the host program does not define before it");
    return it->second;
  };
  for (const auto& v : g.inputs) plan_.inputs.push_back(add(v.name, nullptr));
  for (const auto& c : g.constants) {
    auto it = exe_.constants.find(c.name);
    KILN_CHECK(it != exe_.constants.end(), g.name, ": constant '", c.name, "' is missing from the module");
    KILN_CHECK(it->second.shape() == c.desc.shape && it->second.dtype() == c.desc.dtype, g.name,
               ": constant '", c.name, "' must be ", desc_str(c.desc));
    plan_.constants.push_back({add(c.name, nullptr), &it->second});
  }
  for (const auto& n : g.nodes) {
    Step st;
    st.node = &n;
    if (!n.kernel.empty()) {
      st.kind = Step::Kind::Kernel;
      std::tie(st.fn, st.kernel) = kernels_.at(n.kernel);
    } else if (!n.callee.empty()) {
      st.kind = Step::Kind::Callee;
    } else {
      st.kind = Step::Kind::Op;
      st.op = find_op(n.op);
      KILN_CHECK(st.op, "module: node ", n.name, " runs op '", n.op, "', which this runtime does not have");
    }
    for (const auto& i : n.inputs) st.inputs.push_back(find(i, "node " + n.name + " reads"));
    for (const auto& o : n.outputs)
      st.outputs.push_back(add(o.name, st.kind == Step::Kind::Op ? nullptr : &o));
    if (st.kind == Step::Kind::Kernel)
      plan_.max_args = std::max(plan_.max_args, st.inputs.size() + st.outputs.size());
    plan_.steps.push_back(std::move(st));
  }
  for (const auto& o : g.outputs) plan_.outputs.push_back(find(o, "the output is"));
}

VirtualMachine::~VirtualMachine() = default;

namespace {

// Largest absolute and relative difference between two tensors of one shape.
void compare(const Tensor& got, const Tensor& want, double& max_abs, double& max_rel) {
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = got.get_as_double(i), b = want.get_as_double(i);
    double d = std::fabs(a - b);
    if (std::isnan(a) != std::isnan(b)) d = INFINITY;
    if (std::isnan(d)) continue;
    max_abs = std::max(max_abs, d);
    if (std::fabs(b) > 0) max_rel = std::max(max_rel, d / std::fabs(b));
  }
}

double max_abs_value(const std::vector<Tensor>& ts) {
  double scale = 0;
  for (const auto& w : ts)
    for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::fabs(w.get_as_double(i)));
  return scale;
}

}  // namespace

void VirtualMachine::run_kernel(const Step& step, const std::vector<const Tensor*>& values,
                                std::vector<void*>& args, const RunOptions& opts, double start_us,
                                RunResult& result) const {
  const GraphNode& node = *step.node;
  size_t a = 0;
  for (size_t s : step.inputs) args[a++] = const_cast<void*>(values[s]->raw());
  for (size_t s : step.outputs) args[a++] = const_cast<void*>(values[s]->raw());
  KilnBackendSetLastError("");
  auto t0 = std::chrono::steady_clock::now();
  int32_t code = step.fn(args.data());
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (code != 0)
    throw Error("host kernel " + node.kernel + " (node " + node.name + ") failed (code " +
                std::to_string(code) + "): " + KilnBackendGetLastError());
  if (opts.record_events) {
    result.events.push_back(host_event(node.name, node.kernel, start_us, us));
    result.events.back().fused = step.kernel->ops.nodes.size() > 1;
  }
  if (!opts.verify) return;
  std::vector<Tensor> inputs;
  for (size_t s : step.inputs) inputs.push_back(*values[s]);
  std::vector<Tensor> want = execute_graph(step.kernel->ops, inputs, exe_.constants);
  RegionCheck c;
  c.symbol = node.kernel;
  c.backend = "host";
  c.host_kernel = true;
  for (size_t i = 0; i < want.size(); ++i) compare(*values[step.outputs[i]], want[i], c.max_abs, c.max_rel);
  c.ok = !(c.max_abs > opts.tolerance.atol + opts.tolerance.rtol * max_abs_value(want));
  result.checks.push_back(c);
}

void VirtualMachine::dispatch(const GraphNode& node, const std::vector<Tensor>& inputs,
                              std::vector<Tensor>& outputs, const RunOptions& opts, RunResult& result) const {
  const auto& [backend, graph] = symbols_.at(node.callee);
  BackendRuntime& rt = *runtimes_.at(backend);
  std::vector<std::pair<std::string, Tensor>> node_values;
  NodeObserver observer;
  if (opts.verify)
    observer = [&](const std::string& name, const Tensor& v) { node_values.push_back({name, v.clone()}); };
  std::vector<DispatchEvent>& events = result.events;
  size_t first_event = events.size();
  Status s = rt.run(node.callee, inputs, outputs, opts.record_events ? &events : nullptr, observer);
  if (!s.ok()) throw Error("backend " + backend + " failed in " + node.callee + ": " + s.message);
  for (size_t i = first_event; i < events.size(); ++i) events[i].function = node.callee;
  if (!opts.verify) return;
  // Reference: the same graph on the reference kernels, node by node.
  std::map<std::string, Tensor> reference_nodes;
  GraphRunHooks hooks;
  hooks.observer = [&](const std::string& name, const Tensor& v) { reference_nodes[name] = v; };
  std::vector<Tensor> want = execute_graph(graph, inputs, exe_.constants, hooks);
  RegionCheck c;
  c.symbol = node.callee;
  c.backend = backend;
  for (size_t i = 0; i < want.size(); ++i) compare(outputs[i], want[i], c.max_abs, c.max_rel);
  auto exceeds = [&](double abs_err, double scale) {
    return abs_err > opts.tolerance.atol + opts.tolerance.rtol * scale;
  };
  double scale = 0;
  for (const auto& w : want)
    for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::fabs(w.get_as_double(i)));
  c.ok = !exceeds(c.max_abs, scale);
  if (!c.ok) {
    for (const auto& [name, value] : node_values) {
      auto it = reference_nodes.find(name);
      if (it == reference_nodes.end() || it->second.shape() != value.shape()) continue;
      double a = 0, r = 0, sc = 0;
      compare(value, it->second, a, r);
      for (int64_t i = 0; i < it->second.numel(); ++i)
        sc = std::max(sc, std::fabs(it->second.get_as_double(i)));
      if (exceeds(a, sc)) {
        c.first_divergent_node = name;
        c.node_max_abs = a;
        break;
      }
    }
  }
  result.checks.push_back(c);
}

VirtualMachine::Arena VirtualMachine::new_arena() const {
  Arena arena;
  arena.storage = Tensor::empty({exe_.memory.arena_bytes}, DType::UInt8);
  arena.values.resize(plan_.values.size());
  auto* base = static_cast<uint8_t*>(arena.storage.raw());
  for (size_t s = 0; s < plan_.values.size(); ++s)
    if (plan_.arena_offsets[s] >= 0)
      arena.values[s] = Tensor::wrap(base + plan_.arena_offsets[s], plan_.values[s]->desc.shape,
                                     plan_.values[s]->desc.dtype);
  return arena;
}

VirtualMachine::Arena VirtualMachine::acquire_arena() const {
  if (exe_.memory.arena_bytes <= 0) return Arena();
  {
    std::lock_guard<std::mutex> lock(arena_mu_);
    if (!free_arenas_.empty()) {
      Arena arena = std::move(free_arenas_.back());
      free_arenas_.pop_back();
      return arena;
    }
  }
  return new_arena();
}

void VirtualMachine::release_arena(Arena arena) const {
  if (!arena.storage.defined()) return;
  std::lock_guard<std::mutex> lock(arena_mu_);
  free_arenas_.push_back(std::move(arena));
}

RunResult VirtualMachine::run(const std::vector<Tensor>& inputs, const RunOptions& opts) const {
  const Graph& g = exe_.host;
  KILN_CHECK(inputs.size() == g.inputs.size(), g.name, ": expected ", g.inputs.size(), " input(s), got ",
             inputs.size());
  // Each value of this run by slot: the caller's inputs, the module's
  // constants, the arena's tensors and the run's own allocations.
  std::vector<const Tensor*> values(plan_.values.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphValue& v = g.inputs[i];
    KILN_CHECK(inputs[i].shape() == v.desc.shape && inputs[i].dtype() == v.desc.dtype, g.name, ": input '",
               v.name, "' must be ", desc_str(v.desc), ", got ",
               desc_str({inputs[i].shape(), inputs[i].dtype()}));
    values[plan_.inputs[i]] = &inputs[i];
  }
  for (const auto& [slot, value] : plan_.constants) values[slot] = value;
  // The arena is this run's until it ends (also when it ends with an error).
  struct ArenaLease {
    const VirtualMachine& vm;
    Arena arena;
    ~ArenaLease() { vm.release_arena(std::move(arena)); }
  } lease{*this, acquire_arena()};
  std::deque<Tensor> owned;  // outputs outside the arena (addresses stay put)
  std::vector<void*> args(plan_.max_args);
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  for (const Step& step : plan_.steps) {
    const GraphNode& n = *step.node;
    const double t0 = microseconds_since(start);
    if (step.kind == Step::Kind::Op) {
      std::vector<Tensor> ins;
      for (size_t s : step.inputs) ins.push_back(*values[s]);
      std::vector<Tensor> outs = run_op(*step.op, ins, n.attrs);
      KILN_ASSERT(outs.size() == step.outputs.size(),
                  "node " + n.name + " produced the wrong number of outputs");
      if (opts.record_events)
        result.events.push_back(host_event(n.name, n.op, t0, microseconds_since(start) - t0));
      for (size_t k = 0; k < outs.size(); ++k)
        values[step.outputs[k]] = &owned.emplace_back(std::move(outs[k]));
      continue;
    }
    for (size_t s : step.outputs) {
      if (plan_.arena_offsets[s] >= 0 && lease.arena.storage.defined())
        values[s] = &lease.arena.values[s];
      else
        values[s] =
            &owned.emplace_back(Tensor::empty(plan_.values[s]->desc.shape, plan_.values[s]->desc.dtype));
    }
    if (step.kind == Step::Kind::Kernel) {
      run_kernel(step, values, args, opts, t0, result);
      continue;
    }
    std::vector<Tensor> ins, outs;
    for (size_t s : step.inputs) ins.push_back(*values[s]);
    for (size_t s : step.outputs) outs.push_back(*values[s]);
    size_t first = result.events.size();
    dispatch(n, ins, outs, opts, result);
    // Backend times are relative to their own start; place them in the run.
    for (size_t i = first; i < result.events.size(); ++i) result.events[i].start_us += t0;
  }
  for (size_t s : plan_.outputs) result.outputs.push_back(*values[s]);
  return result;
}

}  // namespace kiln
