// Graph level: IR modules (load, parse, print, interpret), partitioning and
// its report, and the model compile pipeline.
#include <pybind11/functional.h>
#include <pybind11/stl/filesystem.h>

#include "backends/registry.h"
#include "common.h"
#include "driver/compile_model.h"
#include "frontend/load_model.h"
#include "interp/interpreter.h"
#include "ir/model_names.h"
#include "ir/text.h"
#include "pattern/registry.h"
#include "tir/tir.h"
#include "transform/partition.h"

namespace kiln::python {
namespace {

using ModulePtr = std::shared_ptr<Module>;

ImportOptions import_options(const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  ImportOptions o;
  for (const auto& [name, shape] : input_shapes) o.input_shapes[name] = shape;
  return o;
}

const FunctionNode& entry_of(const Module& m, const std::string& entry) {
  const FunctionNode* fn = m.find(entry);
  if (fn) return *fn;
  std::string names;
  for (const auto& f : m.functions) names += (names.empty() ? "@" : ", @") + f->name;
  throw Error("no graph function @" + entry + " (functions: " + (names.empty() ? "none" : names) + ")");
}

py::list params_of(const FunctionNode& fn) {
  py::list out;
  for (const auto& p : fn.params) {
    if (!p->type->is_tensor())
      throw Error("parameter %" + p->name + " of @" + fn.name +
                  " is a tuple; only tensor inputs are supported");
    const TensorDesc& d = p->type->tensor;
    out.append(py::make_tuple(p->name, py::tuple(py::cast(d.shape)), std::string(dtype_name(d.dtype))));
  }
  return out;
}

// Options by name as the command line gives them: "key" for every backend,
// "backend.key" for one of `backends`.
RunCodegenOptions codegen_options(const std::map<std::string, std::string>& options,
                                  const std::vector<std::string>& backends) {
  RunCodegenOptions o;
  for (const auto& [key, value] : options)
    add_codegen_option(o, key, value, backends, "option " + key, "is not one of the backends given");
  if (!options.empty()) check_codegen_options(o, backends);
  return o;
}

void check_backends(const std::vector<std::string>& backends) {
  for (const auto& b : backends) {
    if (!pattern_registry().for_backend(b).empty()) continue;
    std::string names;
    for (const auto& n : pattern_registry().backends()) names += (names.empty() ? "" : ", ") + n;
    throw Error("unknown backend '" + b + "' (registered: " + names + ")");
  }
}

PartitionOptions partition_options(const std::vector<std::string>& backends, int64_t min_region_size,
                                   bool strict, bool bind_constants,
                                   const std::map<std::string, std::string>& options) {
  check_backends(backends);
  if (min_region_size < 0)
    throw Error("min_region_size must be 0 or more, got " + std::to_string(min_region_size));
  PartitionOptions o;
  o.backends = backends;
  o.min_region_size = min_region_size;
  o.strict = strict;
  o.bind_constants = bind_constants;
  o.backend_options = codegen_options(options, backends);
  return o;
}

}  // namespace

// Shared with runtime.cc: named and positional inputs of a function.
std::vector<Tensor> gather_inputs(const std::string& what,
                                  const std::vector<std::pair<std::string, TensorDesc>>& params,
                                  const ModelNames& names, const py::tuple& args, const py::dict& kwargs,
                                  std::vector<py::object>& keep) {
  if (args.size() > params.size())
    throw Error(what + " takes " + std::to_string(params.size()) + " inputs, " + std::to_string(args.size()) +
                " given");
  std::vector<std::string> kiln_names;
  for (const auto& p : params) kiln_names.push_back(p.first);
  // Messages name an input as the model does: its ONNX name, else kiln's.
  auto label = [&](size_t i) {
    auto it = names.inputs.find(kiln_names[i]);
    return it != names.inputs.end() ? it->second : kiln_names[i];
  };
  std::vector<Tensor> out(params.size());
  std::vector<bool> given(params.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    out[i] = from_numpy_as(args[i], params[i].second, "input " + label(i), keep);
    given[i] = true;
  }
  std::string list;
  for (size_t i = 0; i < params.size(); ++i) list += (list.empty() ? "" : ", ") + label(i);
  for (const auto& [key, value] : kwargs) {
    std::string name = py::str(key);
    std::optional<size_t> i = find_input(kiln_names, names, name);
    if (!i) throw Error(what + " has no input '" + name + "' (inputs: " + list + ")");
    if (given[*i]) throw Error(what + ": input '" + label(*i) + "' is given twice");
    out[*i] = from_numpy_as(value, params[*i].second, "input " + label(*i), keep);
    given[*i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (!given[i])
      throw Error(what + ": no value for input '" + label(i) + "' " + shape_str(params[i].second.shape) +
                  " " + std::string(dtype_name(params[i].second.dtype)) + " (inputs: " + list + ")");
  return out;
}

py::dict model_names_dict(const ModelNames& names) {
  py::dict d;
  d["inputs"] = names.inputs;
  d["outputs"] = names.outputs;
  return d;
}

py::list to_numpy_list(const std::vector<Tensor>& ts) {
  py::list out;
  for (const auto& t : ts) out.append(to_numpy(t));
  return out;
}

py::object executable_object(Executable exe);  // runtime.cc

void bind_graph(py::module_& m) {
  py::class_<Module, ModulePtr>(m, "IRModule", "A module of graph (def) and tensor-level (prim) functions.")
      .def("__str__", [](const Module& mod) { return print_module(mod); })
      .def("__repr__",
           [](const Module& mod) {
             std::string names;
             for (const auto& f : mod.functions) names += (names.empty() ? "@" : ", @") + f->name;
             for (const auto& f : mod.prim_functions)
               names += (names.empty() ? "prim @" : ", prim @") + f->name;
             return "<kiln.IRModule " + (names.empty() ? std::string("(empty)") : names) + ">";
           })
      .def(
          "text", [](const Module& mod) { return print_module(mod); }, "The module as .kir text.")
      .def(
          "save",
          [](const Module& mod, const std::filesystem::path& path) { save_module(mod, path.string()); },
          py::arg("path"), "Writes PATH (.kir) and, when it has named constants, its .npz side file.")
      .def_property_readonly("functions",
                             [](const Module& mod) {
                               std::vector<std::string> names;
                               for (const auto& f : mod.functions) names.push_back(f->name);
                               return names;
                             })
      .def_property_readonly("prim_functions",
                             [](const Module& mod) {
                               std::vector<PrimFuncHandle> out;
                               for (const auto& f : mod.prim_functions) out.push_back({f});
                               return out;
                             })
      .def(
          "params",
          [](const Module& mod, const std::string& entry) { return params_of(entry_of(mod, entry)); },
          py::arg("entry") = "main", "The entry's parameters: (name, shape, dtype) each.")
      .def_property_readonly(
          "model_names", [](const Module& mod) { return model_names_dict(model_names(mod)); },
          "The model's own (ONNX) names of @main's inputs and outputs: {\"inputs\": {kiln parameter: "
          "name}, \"outputs\": [name of output 0, ...]}; empty for a module that records none.")
      .def(
          "function_attrs",
          [](const Module& mod, const std::string& name) { return attrs_to_dict(entry_of(mod, name).attrs); },
          py::arg("name"), "A graph function's attributes (Composite, Codegen, global_symbol, ...).")
      .def(
          "interpret",
          [](const Module& mod, const std::string& entry, py::tuple args, py::dict kwargs) {
            const FunctionNode& fn = entry_of(mod, entry);
            std::vector<std::pair<std::string, TensorDesc>> params;
            for (const auto& p : fn.params) {
              if (!p->type->is_tensor()) throw Error("parameter %" + p->name + " is a tuple");
              params.emplace_back(p->name, p->type->tensor);
            }
            std::vector<py::object> keep;
            ModelNames names = entry == "main" ? model_names(mod) : ModelNames{};
            std::vector<Tensor> inputs = gather_inputs("@" + entry, params, names, args, kwargs, keep);
            std::vector<Tensor> outs;
            {
              CompilerLock lock;
              outs = interpret(mod, entry, inputs);
            }
            return to_numpy_list(outs);
          },
          py::arg("entry"), py::arg("args"), py::arg("kwargs"));

  m.def(
      "load",
      [](const std::string& path, const std::map<std::string, std::vector<int64_t>>& input_shapes) {
        ImportOptions o = import_options(input_shapes);
        CompilerLock lock;
        return std::make_shared<Module>(load_model(path, o));
      },
      py::arg("path"), py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{});
  m.def(
      "parse",
      [](const std::string& text, const std::string& filename) {
        CompilerLock lock;
        Module mod = parse_module(text, filename);
        verify_module(mod);
        return std::make_shared<Module>(std::move(mod));
      },
      py::arg("text"), py::arg("filename") = "<string>");

  py::class_<OpDecision>(m, "OpDecision", "What the partitioner decided for one op call.")
      .def_readonly("function", &OpDecision::function)
      .def_readonly("var", &OpDecision::var)
      .def_readonly("op", &OpDecision::op)
      .def_readonly("backend", &OpDecision::backend)
      .def_readonly("pattern", &OpDecision::pattern)
      .def_readonly("region", &OpDecision::region)
      .def_readonly("reason", &OpDecision::reason)
      .def_readonly("notes", &OpDecision::notes)
      .def_property_readonly("offloaded", &OpDecision::offloaded)
      .def("__repr__", [](const OpDecision& d) {
        return "<OpDecision %" + d.var + " " + d.op + ": " +
               (d.offloaded() ? d.backend + " (" + d.pattern + ", @" + d.region + ")"
                              : "host (" + d.reason + ")") +
               ">";
      });

  py::class_<PartitionReport>(m, "PartitionReport", "The explanation of every partitioning decision.")
      .def_readonly("ops", &PartitionReport::ops)
      .def_property_readonly("offloaded_count", &PartitionReport::offloaded_count)
      .def_property_readonly("region_count", &PartitionReport::region_count)
      .def("summary", &PartitionReport::summary)
      .def("explain", &PartitionReport::explain)
      .def("to_json", &PartitionReport::to_json)
      .def("to_dot", &PartitionReport::to_dot, py::arg("original"))
      .def(
          "find",
          [](PartitionReport& r, const std::string& var, const std::string& function) -> py::object {
            OpDecision* d = r.find(function, var);
            return d ? py::cast(*d) : py::none();
          },
          py::arg("var"), py::arg("function") = "main")
      .def("__str__", &PartitionReport::explain);

  m.def(
      "partition",
      [](const Module& mod, const std::vector<std::string>& backends, bool merge, int64_t min_region_size,
         bool strict, bool bind_constants, const std::map<std::string, std::string>& options) {
        PartitionOptions o = partition_options(backends, min_region_size, strict, bind_constants, options);
        PartitionReport report;
        Module parted;
        {
          CompilerLock lock;
          parted = partition_module(mod, o, merge, &report);
        }
        return py::make_tuple(std::make_shared<Module>(std::move(parted)), report);
      },
      py::arg("module"), py::arg("backends"), py::arg("merge"), py::arg("min_region_size"), py::arg("strict"),
      py::arg("bind_constants"), py::arg("options"));

  py::class_<driver::CompileSummary>(m, "CompileSummary", "What the compile pipeline did.")
      .def_readonly("offloaded", &driver::CompileSummary::offloaded)
      .def_readonly("report", &driver::CompileSummary::report)
      .def_readonly("host_ops", &driver::CompileSummary::host_ops)
      .def_readonly("lowered_ops", &driver::CompileSummary::lowered_ops)
      .def_readonly("kernels", &driver::CompileSummary::kernels)
      .def_readonly("distinct_kernels", &driver::CompileSummary::distinct_kernels)
      .def_readonly("reference_ops", &driver::CompileSummary::reference_ops)
      .def_readonly("cpu", &driver::CompileSummary::cpu)
      .def_readonly("arena_bytes", &driver::CompileSummary::arena_bytes)
      .def_readonly("compile_ms", &driver::CompileSummary::compile_ms)
      .def("__str__", &driver::CompileSummary::str);

  m.def(
      "compile",
      [](const Module& mod, const std::vector<std::string>& backends, bool merge, int64_t min_region_size,
         bool strict, bool bind_constants, const std::map<std::string, std::string>& options,
         const std::string& entry, bool strict_compile, bool compile_host, const std::string& layout,
         const std::string& float16_precision) {
        if (layout != "blocked" && layout != "nchw")
          throw Error("kiln.compile: layout='" + layout + "' must be 'blocked' or 'nchw'");
        if (float16_precision != "per-op" && float16_precision != "excess")
          throw Error("kiln.compile: float16_precision='" + float16_precision +
                      "' must be 'per-op' or 'excess'");
        entry_of(mod, entry);
        driver::CompileOptions o;
        o.entry = entry;
        o.partition = partition_options(backends, min_region_size, strict, bind_constants, options);
        o.merge = merge;
        o.codegen = o.partition.backend_options;
        o.strict_compile = strict_compile;
        o.compile_host = compile_host;
        o.blocked_layout = layout == "blocked";
        o.float16_excess_precision = float16_precision == "excess";
        driver::CompileSummary summary;
        Executable exe;
        {
          CompilerLock lock;
          exe = driver::compile_model(mod, o, &summary);
        }
        return py::make_tuple(executable_object(std::move(exe)), summary);
      },
      py::arg("module"), py::arg("backends"), py::arg("merge"), py::arg("min_region_size"), py::arg("strict"),
      py::arg("bind_constants"), py::arg("options"), py::arg("entry"), py::arg("strict_compile"),
      py::arg("compile_host"), py::arg("layout"), py::arg("float16_precision"));
}

}  // namespace kiln::python
