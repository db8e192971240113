// Compiled modules: a .kmod's Executable on the VM, run on numpy arrays.
#include <atomic>
#include <mutex>
#include <thread>

#include "common.h"
#include "runtime/file_io.h"
#include "runtime/module_file.h"
#include "runtime/profile.h"
#include "runtime/vm.h"

namespace kiln::python {
namespace {

// One VM; runs are serialised (the module keeps the events and checks of the
// last run, and a Python backend's runtime may not allow concurrent runs).
// The GIL is released before the lock is taken, so a run waiting here never
// blocks a callback of the run in progress.
struct CompiledModule {
  std::unique_ptr<VirtualMachine> vm;
  std::mutex mu;
  // The thread running the VM, so a backend callback that runs the same
  // module again is an error instead of waiting for itself.
  std::atomic<std::thread::id> runner{};
  std::vector<DispatchEvent> events;
  std::vector<RegionCheck> checks;

  std::vector<std::pair<std::string, TensorDesc>> inputs() const {
    std::vector<std::pair<std::string, TensorDesc>> out;
    for (const auto& in : vm->executable().host.inputs) out.emplace_back(in.name, in.desc);
    return out;
  }
};
using CompiledPtr = std::shared_ptr<CompiledModule>;

CompiledPtr make_compiled(Executable exe) {
  auto c = std::make_shared<CompiledModule>();
  CompilerLock lock;  // backend runtimes are looked up and created; their init may call into Python
  c->vm = std::make_unique<VirtualMachine>(std::move(exe));
  return c;
}

bool overlaps(const Tensor& a, const void* begin, size_t bytes) {
  auto* p = static_cast<const char*>(a.raw());
  auto* b = static_cast<const char*>(begin);
  return p < b + bytes && b < p + a.nbytes();
}

// An output that shares memory with an input (which the caller owns) or a
// constant (which the module owns) is copied, so the array returned is the
// caller's alone.
Tensor own_output(const Tensor& out, const std::vector<Tensor>& inputs, const Executable& exe) {
  if (out.nbytes() == 0) return out;
  for (const auto& in : inputs)
    if (overlaps(out, in.raw(), in.nbytes())) return out.clone();
  for (const auto& [name, c] : exe.constants)
    if (overlaps(out, c.raw(), c.nbytes())) return out.clone();
  return out;
}

std::string verify_failure(const std::vector<RegionCheck>& checks, double atol, double rtol) {
  const RegionCheck* first = nullptr;
  int failed = 0;
  for (const auto& c : checks) {
    if (c.ok) continue;
    ++failed;
    if (!first) first = &c;
  }
  if (!first) return "";
  std::string where =
      first->host_kernel ? "host kernel " + first->symbol : "@" + first->symbol + " (" + first->backend + ")";
  if (!first->first_divergent_node.empty()) where += ", first divergent node " + first->first_divergent_node;
  char tol[128];
  std::snprintf(tol, sizeof tol, "max abs %.3g over atol %.3g + rtol %.3g", first->max_abs, atol, rtol);
  return "verify failed: " + std::to_string(failed) + " of " + std::to_string(checks.size()) +
         " checks mismatch the reference kernels; first: " + where + " (" + tol + ")";
}

py::dict event_dict(const DispatchEvent& e) {
  py::dict d;
  d["backend"] = e.backend;
  d["function"] = e.function;
  d["node"] = e.node;
  d["op"] = e.op;
  d["engine"] = e.engine;
  d["tiles"] = e.tiles;
  d["fused"] = e.fused;
  d["bytes_per_tier"] = e.bytes_per_tier;
  d["cycles"] = e.cycles;
  d["start_us"] = e.start_us;
  d["duration_us"] = e.duration_us;
  return d;
}

}  // namespace

py::object executable_object(Executable exe) { return py::cast(make_compiled(std::move(exe))); }

void bind_runtime(py::module_& m) {
  py::class_<RegionCheck>(m, "RegionCheck", "One --verify comparison with the reference kernels.")
      .def_readonly("symbol", &RegionCheck::symbol)
      .def_readonly("backend", &RegionCheck::backend)
      .def_readonly("max_abs", &RegionCheck::max_abs)
      .def_readonly("max_rel", &RegionCheck::max_rel)
      .def_readonly("ok", &RegionCheck::ok)
      .def_readonly("first_divergent_node", &RegionCheck::first_divergent_node)
      .def_readonly("host_kernel", &RegionCheck::host_kernel)
      .def("__str__", &RegionCheck::str);

  py::class_<CompiledModule, CompiledPtr>(m, "Module", "A compiled module (.kmod) on the VM.")
      .def_static(
          "load",
          [](const std::string& path) {
            Executable exe;
            {
              py::gil_scoped_release release;
              exe = read_kmod(path);
            }
            return make_compiled(std::move(exe));
          },
          py::arg("path"), "Loads a .kmod with the runtime alone.")
      .def(
          "save",
          [](CompiledModule& c, const std::string& path) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(c.mu);
            write_kmod(path, c.vm->executable());
          },
          py::arg("path"), "Writes the module as one .kmod file.")
      .def_property_readonly("inputs",
                             [](const CompiledModule& c) {
                               py::list out;
                               for (const auto& [name, d] : c.inputs())
                                 out.append(py::make_tuple(name, py::tuple(py::cast(d.shape)),
                                                           std::string(dtype_name(d.dtype))));
                               return out;
                             })
      .def_property_readonly("outputs",
                             [](const CompiledModule& c) { return c.vm->executable().host.outputs; })
      .def_property_readonly(
          "model_names", [](const CompiledModule& c) { return model_names_dict(c.vm->executable().names); })
      .def_property_readonly("offload_summary",
                             [](const CompiledModule& c) { return c.vm->executable().offload_summary; })
      .def_property_readonly("backends",
                             [](const CompiledModule& c) {
                               std::vector<std::string> out;
                               for (const auto& p : c.vm->executable().backends) out.push_back(p.backend);
                               return out;
                             })
      .def_property_readonly("events",
                             [](CompiledModule& c) {
                               py::list out;
                               for (const auto& e : c.events) out.append(event_dict(e));
                               return out;
                             })
      .def_property_readonly("checks", [](CompiledModule& c) { return c.checks; })
      .def(
          "run",
          [](CompiledModule& c, py::tuple args, py::dict kwargs, bool verify, double atol, double rtol,
             const std::string& profile, const std::string& dispatch_log) {
            if (c.runner.load() == std::this_thread::get_id())
              throw Error(
                  "the module is running on this thread already (a backend callback cannot run the "
                  "module that called it)");
            std::vector<py::object> keep;
            std::vector<Tensor> inputs =
                gather_inputs("the module", c.inputs(), c.vm->executable().names, args, kwargs, keep);
            std::vector<Tensor> outs;
            std::string failure;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(c.mu);
              struct Runner {
                std::atomic<std::thread::id>& id;
                explicit Runner(std::atomic<std::thread::id>& r) : id(r) { id = std::this_thread::get_id(); }
                ~Runner() { id = std::thread::id(); }
              } runner(c.runner);
              VirtualMachine::RunOptions ro;
              ro.record_events = true;
              ro.verify = verify;
              ro.tolerance = {atol, rtol};
              RunResult run = c.vm->run(inputs, ro);
              outs = std::move(run.outputs);
              for (auto& t : outs) t = own_output(t, inputs, c.vm->executable());
              c.events = std::move(run.events);
              c.checks = std::move(run.checks);
              if (!profile.empty()) write_file(profile, chrome_trace(c.events));
              if (!dispatch_log.empty()) write_file(dispatch_log, kiln::dispatch_log(c.events));
              if (verify) failure = verify_failure(c.checks, atol, rtol);
            }
            if (!failure.empty()) throw Error(failure);
            return to_numpy_list(outs);
          },
          py::arg("args"), py::arg("kwargs"), py::arg("verify"), py::arg("atol"), py::arg("rtol"),
          py::arg("profile"), py::arg("dispatch_log"));
}

}  // namespace kiln::python
