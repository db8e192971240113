// Patterns and backends from Python, for prototyping.
//
// A pattern registered from Python may carry a check written in Python:
// check(match, options) returns None to accept or a reason string, which the
// partition report gives for the ops it leaves on the host. A backend defined
// in Python gets kiln's generic codegen (one kiln.graph per offloaded
// function, every attribute kept) and a runtime that hands each dispatch to a
// Python object: run(function, inputs) returns the outputs as numpy arrays.
// Both are called with the GIL taken (common.h), from whatever thread kiln
// runs them on.
#include <chrono>
#include <set>

#include "backends/graph_codegen.h"
#include "backends/registry.h"
#include "common.h"
#include "ir/text.h"
#include "kiln/runtime/backend.h"
#include "pattern/registry.h"
#include "runtime/graph.h"

namespace kiln::python {
namespace {

struct PatternHandle {
  Pattern pattern;
};

// Backends registered from Python (so built-in ones cannot be replaced or dropped).
std::set<std::string>& python_backends() {
  static std::set<std::string> names;
  return names;
}

// ---------------------------------------------------------------- what a check sees

// A snapshot of one expression of a match, made while the match exists.
struct ExprInfo {
  std::string kind;  // "var", "constant", "call", "tuple", "tuple_get_item"
  std::string name;  // var: its name; constant: its side-file name
  bool is_tensor = true;
  Shape shape;                 // tensors
  std::string dtype;           // tensors
  Tensor value;                // constants
  std::string op;              // calls of ops
  std::string callee;          // calls of functions
  Attrs attrs;                 // calls
  std::vector<ExprInfo> args;  // calls: one level deep
};

ExprInfo expr_info(const Expr& e, int depth) {
  ExprInfo info;
  if (e->type->is_tensor()) {
    info.shape = e->type->tensor.shape;
    info.dtype = std::string(dtype_name(e->type->tensor.dtype));
  } else {
    info.is_tensor = false;
  }
  if (auto* v = as<VarNode>(e)) {
    info.kind = "var";
    info.name = v->name;
  } else if (auto* c = as<ConstantNode>(e)) {
    info.kind = "constant";
    info.name = c->name;
    info.value = c->value;
  } else if (auto* call = as<CallNode>(e)) {
    info.kind = "call";
    if (call->op) info.op = call->op->name;
    info.callee = call->callee;
    info.attrs = call->attrs;
    if (depth > 0)
      for (const auto& a : call->args) info.args.push_back(expr_info(a, depth - 1));
  } else if (as<TupleNode>(e)) {
    info.kind = "tuple";
  } else {
    info.kind = "tuple_get_item";
  }
  return info;
}

struct MatchInfo {
  std::string root;  // the variable the pattern's top matched
  std::vector<ExprInfo> calls;
  std::vector<std::string> call_vars;  // the variable each call defines
  std::vector<ExprInfo> inputs;
  std::vector<ExprInfo> constants;
  std::map<std::string, std::vector<ExprInfo>> annotated;
};

MatchInfo match_info(const Match& m) {
  MatchInfo out;
  if (m.root) out.root = m.root->var->name;
  for (const Binding* b : m.bindings) {
    out.calls.push_back(expr_info(b->value, 1));
    out.call_vars.push_back(b->var->name);
  }
  for (const auto& e : m.inputs) out.inputs.push_back(expr_info(e, 0));
  for (const auto& e : m.constants) out.constants.push_back(expr_info(e, 0));
  for (const auto& [name, exprs] : m.annotated)
    for (const auto& e : exprs) out.annotated[name].push_back(expr_info(e, 1));
  return out;
}

PatternCheck python_check(const std::string& name, py::object check) {
  auto fn = std::make_shared<PyRef>(std::move(check));
  return [fn, name](const Match& m, const BackendOptions& options) -> std::optional<std::string> {
    MatchInfo info = match_info(m);  // before the GIL: plain C++
    return call_python("check of " + name, [&]() -> std::optional<std::string> {
      py::object r = fn->get()(info, options);
      if (r.is_none()) return std::nullopt;
      if (py::isinstance<py::str>(r)) return r.cast<std::string>();
      throw Error("check of " + name + " returned " + std::string(py::str(py::type::of(r).attr("__name__"))) +
                  "; a check returns None to accept the match or a reason string to reject it");
    });
  };
}

// ---------------------------------------------------------------- Python backend runtimes

// One offloaded function as the Python runtime sees it.
struct FunctionInfo {
  std::string symbol;
  Graph graph;
  std::map<std::string, Tensor> constants;  // the ones the graph names
};

py::tuple value_tuple(const GraphValue& v) {
  return py::make_tuple(v.name, py::tuple(py::cast(v.desc.shape)), std::string(dtype_name(v.desc.dtype)));
}

class PythonBackendRuntime : public BackendRuntime {
 public:
  PythonBackendRuntime(std::string name, std::shared_ptr<PyRef> object)
      : name_(std::move(name)), object_(std::move(object)) {}

  std::string name() const override { return name_; }

  Status init(const std::vector<BackendFunction>& functions, const std::map<std::string, Tensor>& constants,
              const std::map<std::string, std::string>& options) override {
    try {
      for (const auto& f : functions) {
        auto info = std::make_shared<FunctionInfo>();
        info->symbol = f.symbol;
        info->graph = graph_from_json(f.artifact, name_ + " function " + f.symbol);
        for (const auto& c : info->graph.constants) {
          auto it = constants.find(c.name);
          if (it == constants.end()) return Status::error(f.symbol + ": constant " + c.name + " is missing");
          info->constants[c.name] = it->second;
        }
        functions_[f.symbol] = info;
      }
      call_python("backend " + name_ + ": init", [&] {
        if (!py::hasattr(object_->get(), "init")) return;
        py::dict fns;
        for (const auto& [symbol, info] : functions_) fns[py::str(symbol)] = info;
        object_->get().attr("init")(fns, options);
      });
    } catch (const Error& e) {
      return Status::error(e.what());
    }
    return Status::success();
  }

  Status run(const std::string& symbol, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
             std::vector<DispatchEvent>* events, const NodeObserver&) override {
    auto it = functions_.find(symbol);
    if (it == functions_.end()) return Status::error("no function " + symbol + " was given to init");
    const FunctionInfo& fn = *it->second;
    auto start = std::chrono::steady_clock::now();
    try {
      call_python("backend " + name_ + ": run of " + symbol,
                  [&] { run_python(it->second, inputs, outputs); });
    } catch (const Error& e) {
      return Status::error(e.what());
    }
    if (events) {
      DispatchEvent e;
      e.backend = name_;
      e.function = symbol;
      e.engine = "PYTHON";
      for (const auto& n : fn.graph.nodes) e.op += (e.op.empty() ? "" : "+") + n.op;
      if (!fn.graph.nodes.empty()) e.node = fn.graph.nodes.back().name;
      e.duration_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      events->push_back(std::move(e));
    }
    return Status::success();
  }

 private:
  // With the GIL held.
  void run_python(const std::shared_ptr<FunctionInfo>& fn, const std::vector<Tensor>& inputs,
                  std::vector<Tensor>& outputs) {
    py::list args;
    for (const auto& t : inputs) args.append(to_numpy(t, /*writeable=*/false));
    py::object r = object_->get().attr("run")(fn, args);
    std::vector<py::object> results;
    if (py::isinstance<py::array>(r)) {
      results.push_back(r);
    } else if (py::isinstance<py::sequence>(r) && !py::isinstance<py::str>(r)) {
      for (auto item : py::reinterpret_borrow<py::sequence>(r))
        results.push_back(py::reinterpret_borrow<py::object>(item));
    } else {
      throw Error("run returned " + std::string(py::str(py::type::of(r).attr("__name__"))) +
                  "; it returns the outputs as a numpy array or a list of them");
    }
    if (results.size() != outputs.size())
      throw Error("run returned " + std::to_string(results.size()) + " outputs, the function has " +
                  std::to_string(outputs.size()));
    py::module_ np = py::module_::import("numpy");
    for (size_t i = 0; i < outputs.size(); ++i) {
      py::array got = np.attr("asarray")(results[i]);
      Shape shape(got.shape(), got.shape() + got.ndim());
      std::string expected =
          shape_str(outputs[i].shape()) + " " + std::string(dtype_name(outputs[i].dtype()));
      bool dtype_ok = got.dtype().attr("__eq__")(numpy_dtype(outputs[i].dtype())).cast<bool>();
      if (shape != outputs[i].shape() || !dtype_ok)
        throw Error("output " + std::to_string(i) + " is " + shape_str(shape) + " " +
                    dtype_text(got.dtype()) + ", expected " + expected);
      np.attr("copyto")(to_numpy(outputs[i]), got);
    }
  }

  std::string name_;
  std::shared_ptr<PyRef> object_;
  std::map<std::string, std::shared_ptr<FunctionInfo>> functions_;
};

BackendArtifacts python_backend_codegen(const std::string& backend, const Module& m,
                                        const std::vector<Function>& functions) {
  BackendArtifacts out;
  GraphLowering state;
  for (const auto& f : functions) {
    std::string symbol = f->attrs.get_string("global_symbol");
    Graph g = lower_to_graph(m, *f, symbol, state);
    for (const auto& n : g.nodes)
      KILN_CHECK(n.callee.empty(), backend, " codegen: @", f->name, " calls @", n.callee,
                 "; only functions partitioned for ", backend, " can be compiled");
    out.artifacts[symbol] = graph_to_json(g);
  }
  out.constants = std::move(state.constants);
  return out;
}

void check_python_backend_name(const std::string& name) {
  KILN_CHECK(!name.empty() && name.find('.') == std::string::npos,
             "a backend name must be non-empty and have no '.', got '", name, "'");
  bool builtin = !pattern_registry().for_backend(name).empty() && !python_backends().count(name);
  KILN_CHECK(!builtin, "backend ", name, " is built into kiln; a Python backend needs another name");
}

void unregister_python_backend(const std::string& name) {
  CompilerLock lock;
  KILN_CHECK(python_backends().count(name), "no Python backend ", name, " is registered");
  pattern_registry().remove_backend(name);
  remove_backend_codegen(name);
  unregister_backend_runtime(name);
  python_backends().erase(name);
}

py::dict pattern_entry_dict(const PatternEntry& e) {
  py::dict d;
  d["name"] = e.name;
  d["backend"] = e.backend();
  d["short_name"] = e.short_name();
  d["priority"] = e.priority;
  d["description"] = e.description;
  d["pattern"] = pattern_str(e.pattern);
  d["annotations"] = e.annotations();
  d["has_check"] = static_cast<bool>(e.check);
  d["python"] = python_backends().count(e.backend()) != 0;
  return d;
}

std::vector<Pattern> unwrap(const std::vector<PatternHandle>& ps) {
  std::vector<Pattern> out;
  for (const auto& p : ps) out.push_back(p.pattern);
  return out;
}

}  // namespace

void bind_backends(py::module_& m) {
  py::class_<PatternHandle>(m, "Pattern", "A dataflow pattern: what a backend claims.")
      .def("__str__", [](const PatternHandle& p) { return pattern_str(p.pattern); })
      .def("__repr__", [](const PatternHandle& p) { return "<Pattern " + pattern_str(p.pattern) + ">"; })
      .def("annotations", [](const PatternHandle& p) { return pattern_annotations(p.pattern); });
  m.def(
      "is_op",
      [](const std::string& op, const std::vector<PatternHandle>& args, const py::dict& attrs) {
        return PatternHandle{is_op(op, unwrap(args), attrs_from_dict(attrs))};
      },
      py::arg("op"), py::arg("args"), py::arg("attrs"));
  m.def("wildcard", [] { return PatternHandle{wildcard()}; });
  m.def("is_constant", [] { return PatternHandle{is_constant()}; });
  m.def("alternatives", [](const std::vector<PatternHandle>& ps) {
    KILN_CHECK(!ps.empty(), "alternatives needs at least one pattern");
    return PatternHandle{alternatives(unwrap(ps))};
  });
  m.def("optional_op", [](const PatternHandle& p) { return PatternHandle{optional_op(p.pattern)}; });
  m.def("annotate", [](const std::string& name, const PatternHandle& p) {
    return PatternHandle{annotate(name, p.pattern)};
  });

  py::class_<ExprInfo>(m, "MatchedExpr", "An expression of a pattern match, as a check sees it.")
      .def_readonly("kind", &ExprInfo::kind)
      .def_readonly("name", &ExprInfo::name)
      .def_readonly("is_tensor", &ExprInfo::is_tensor)
      .def_property_readonly("shape", [](const ExprInfo& e) { return py::tuple(py::cast(e.shape)); })
      .def_readonly("dtype", &ExprInfo::dtype)
      .def_readonly("op", &ExprInfo::op)
      .def_readonly("callee", &ExprInfo::callee)
      .def_property_readonly("attrs", [](const ExprInfo& e) { return attrs_to_dict(e.attrs); })
      .def_readonly("args", &ExprInfo::args)
      .def_property_readonly("value",
                             [](const ExprInfo& e) -> py::object {
                               if (!e.value.defined()) return py::none();
                               return to_numpy(e.value, /*writeable=*/false);
                             })
      .def("__repr__", [](const ExprInfo& e) {
        std::string what = e.kind == "call" ? (e.op.empty() ? "@" + e.callee : e.op) : e.kind;
        return "<MatchedExpr " + what + (e.name.empty() ? "" : " " + e.name) + " " + shape_str(e.shape) +
               " " + e.dtype + ">";
      });
  py::class_<MatchInfo>(m, "Match", "What a pattern matched: the op calls, inputs, constants, annotations.")
      .def_readonly("root", &MatchInfo::root)
      .def_readonly("calls", &MatchInfo::calls)
      .def_readonly("call_vars", &MatchInfo::call_vars)
      .def_readonly("inputs", &MatchInfo::inputs)
      .def_readonly("constants", &MatchInfo::constants)
      .def_readonly("annotated", &MatchInfo::annotated)
      .def(
          "find_call",
          [](const MatchInfo& mi, const std::string& op) -> py::object {
            for (const auto& c : mi.calls)
              if (c.op == op) return py::cast(c);
            return py::none();
          },
          py::arg("op"), "The first matched call of `op`, or None.")
      .def(
          "first",
          [](const MatchInfo& mi, const std::string& name) -> py::object {
            auto it = mi.annotated.find(name);
            if (it == mi.annotated.end() || it->second.empty()) return py::none();
            return py::cast(it->second.front());
          },
          py::arg("name"), "The first expression annotated `name`, or None.");

  m.def(
      "patterns",
      [](const std::string& backend) {
        py::list out;
        if (backend.empty()) {
          for (const auto& b : pattern_registry().backends())
            for (const PatternEntry* e : pattern_registry().for_backend(b))
              out.append(pattern_entry_dict(*e));
          return out;
        }
        auto entries = pattern_registry().for_backend(backend);
        if (entries.empty()) {
          std::string names;
          for (const auto& n : pattern_registry().backends()) names += (names.empty() ? "" : ", ") + n;
          throw Error("unknown backend '" + backend + "' (registered: " + names + ")");
        }
        for (const PatternEntry* e : entries) out.append(pattern_entry_dict(*e));
        return out;
      },
      py::arg("backend"));
  m.def("backends", [] { return pattern_registry().backends(); });

  m.def(
      "register_pattern",
      [](const std::string& name, const PatternHandle& pattern, py::object check, int priority,
         const std::string& description) {
        size_t dot = name.find('.');
        KILN_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < name.size(),
                   "a pattern name is <backend>.<pattern>, got '", name, "'");
        KILN_CHECK(check.is_none() || PyCallable_Check(check.ptr()), "the check of ", name,
                   " is not callable");
        PatternEntry e;
        e.name = name;
        e.pattern = pattern.pattern;
        if (!check.is_none()) e.check = python_check(name, std::move(check));
        e.priority = priority;
        e.description = description;
        CompilerLock lock;  // after `e`: released (GIL back) before `e` and its check go
        std::string backend = name.substr(0, dot);
        check_python_backend_name(backend);
        KILN_CHECK(python_backends().count(backend), "register the backend ", backend,
                   " first (kiln.register_backend)");
        pattern_registry().add(std::move(e));
      },
      py::arg("name"), py::arg("pattern"), py::arg("check"), py::arg("priority"), py::arg("description"));

  m.def(
      "register_backend",
      [](const std::string& name, py::object runtime, const std::string& description) {
        KILN_CHECK(py::hasattr(runtime, "run"), "the runtime of backend ", name,
                   " has no run(function, inputs) method");
        bool is_class = py::isinstance<py::type>(runtime);
        auto ref = std::make_shared<PyRef>(std::move(runtime));
        CompilerLock lock;
        check_python_backend_name(name);
        register_backend_codegen(
            BackendCodegen{name, description,
                           [name](const Module& mod, const std::vector<Function>& fns,
                                  const CodegenOptions&) { return python_backend_codegen(name, mod, fns); }});
        register_backend_runtime(name, [name, ref, is_class]() -> std::unique_ptr<BackendRuntime> {
          if (!is_class) return std::make_unique<PythonBackendRuntime>(name, ref);
          // A class: one instance per loaded module.
          py::object inst =
              call_python("backend " + name + ": creating its runtime", [&] { return ref->get()(); });
          return std::make_unique<PythonBackendRuntime>(name, std::make_shared<PyRef>(std::move(inst)));
        });
        python_backends().insert(name);
      },
      py::arg("name"), py::arg("runtime"), py::arg("description"));
  m.def("unregister_backend", &unregister_python_backend, py::arg("name"),
        "Drops a Python backend's patterns, codegen and runtime.");
  m.def("python_backends",
        [] { return std::vector<std::string>(python_backends().begin(), python_backends().end()); });
  m.def("_unregister_python_backends", [] {
    std::vector<std::string> names(python_backends().begin(), python_backends().end());
    for (const auto& n : names) unregister_python_backend(n);
  });

  py::class_<FunctionInfo, std::shared_ptr<FunctionInfo>>(
      m, "OffloadedFunction", "One offloaded function as a Python backend runs it.")
      .def_readonly("symbol", &FunctionInfo::symbol)
      .def_property_readonly("inputs",
                             [](const FunctionInfo& f) {
                               py::list out;
                               for (const auto& v : f.graph.inputs) out.append(value_tuple(v));
                               return out;
                             })
      .def_property_readonly("outputs", [](const FunctionInfo& f) { return f.graph.outputs; })
      .def_property_readonly("nodes",
                             [](const FunctionInfo& f) {
                               py::list out;
                               for (const auto& n : f.graph.nodes) {
                                 py::dict d;
                                 d["name"] = n.name;
                                 d["op"] = n.op;
                                 d["inputs"] = n.inputs;
                                 py::list outs;
                                 for (const auto& v : n.outputs) outs.append(value_tuple(v));
                                 d["outputs"] = outs;
                                 d["attrs"] = attrs_to_dict(n.attrs);
                                 d["group"] = n.group;
                                 d["pattern"] = n.pattern;
                                 out.append(d);
                               }
                               return out;
                             })
      .def_property_readonly("constants",
                             [](const FunctionInfo& f) {
                               py::dict out;
                               for (const auto& [name, t] : f.constants)
                                 out[py::str(name)] = to_numpy(t, false);
                               return out;
                             })
      .def("to_json", [](const FunctionInfo& f) { return graph_to_json(f.graph); })
      .def("__repr__", [](const FunctionInfo& f) {
        return "<OffloadedFunction " + f.symbol + ": " + std::to_string(f.graph.nodes.size()) + " nodes>";
      });
}

}  // namespace kiln::python
