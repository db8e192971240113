// Tensor level: expressions, tensor expressions and schedules, lowering to
// prim functions, and builds for the host (JIT) and Hexagon (QEMU).
//
// Python numbers in expressions take the type of the other operand
// (A[i] + 1 on int8 is an int8 add); the C++ constructors check the rest.
#include <pybind11/functional.h>
#include <pybind11/operators.h>

#include <filesystem>
#include <fstream>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "codegen/prim_runner.h"
#include "codegen/target.h"
#include "common.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::python {
namespace {

namespace te = tir::te;
using tir::DataType;

struct ExprHandle {
  tir::Expr expr;
};
struct ReduceAxisHandle {
  te::IterVar axis;
};
struct ReductionHandle {
  te::Reduction reduction;
};
struct TensorHandle {
  te::Tensor tensor;
};
// A stage keeps its schedule alive.
struct StageHandle {
  std::shared_ptr<te::Schedule> schedule;
  te::Stage* stage;
};

DataType tir_dtype(const py::handle& obj) {
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (auto t = tir::parse_dtype(name)) return *t;
    throw Error("unknown dtype '" + name + "' (int8, uint8, int32, int64, float32, bool, ...)");
  }
  return tir::from_dtype(dtype_from_object(obj));
}

// `hint`: the type of the other operand, for Python numbers.
tir::Expr to_expr(const py::handle& obj, std::optional<DataType> hint = std::nullopt) {
  if (py::isinstance<ExprHandle>(obj)) return obj.cast<const ExprHandle&>().expr;
  if (py::isinstance<ReduceAxisHandle>(obj)) return obj.cast<const ReduceAxisHandle&>().axis.var;
  if (py::isinstance<py::bool_>(obj))
    throw Error("a Python bool is not an expression; compare expressions instead");
  if (py::isinstance<py::int_>(obj)) {
    int64_t v = obj.cast<int64_t>();
    if (hint && hint->is_float()) return tir::float_imm(double(v), *hint);
    if (hint && hint->is_integer()) return tir::int_imm(v, *hint);
    return tir::int_imm(v);
  }
  if (py::isinstance<py::float_>(obj)) {
    double v = obj.cast<double>();
    if (hint && hint->is_float()) return tir::float_imm(v, *hint);
    if (hint && !hint->is_float())
      throw Error("the float " + std::string(py::str(obj)) + " with an operand of type " +
                  tir::dtype_str(*hint) + "; cast one of them (te.cast)");
    return tir::float_imm(v);
  }
  throw Error(std::string(py::str(py::type::of(obj).attr("__name__"))) + " is not an expression");
}

bool is_python_number(const py::handle& obj) {
  return py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj);
}

// Both operands, numbers typed after the other one.
std::pair<tir::Expr, tir::Expr> operands(const py::handle& a, const py::handle& b) {
  if (is_python_number(a) && !is_python_number(b)) {
    tir::Expr eb = to_expr(b);
    return {to_expr(a, eb->dtype), eb};
  }
  tir::Expr ea = to_expr(a);
  return {ea, to_expr(b, ea->dtype)};
}

ExprHandle binary(tir::BinaryOp op, const py::handle& a, const py::handle& b) {
  auto [x, y] = operands(a, b);
  return {tir::binary(op, x, y)};
}

tir::Var to_var(const py::handle& obj, const std::string& what) {
  if (py::isinstance<ReduceAxisHandle>(obj)) return obj.cast<const ReduceAxisHandle&>().axis.var;
  if (py::isinstance<ExprHandle>(obj)) {
    const tir::Expr& e = obj.cast<const ExprHandle&>().expr;
    if (tir::as<tir::VarNode>(e)) return std::static_pointer_cast<const tir::VarNode>(e);
  }
  throw Error(what + ": expected a loop variable, got " + std::string(py::str(obj)));
}

std::vector<tir::Expr> indices_of(const py::handle& key) {
  std::vector<tir::Expr> out;
  if (py::isinstance<py::tuple>(key)) {
    for (auto item : py::reinterpret_borrow<py::tuple>(key)) out.push_back(to_expr(item, DataType::int32()));
  } else {
    out.push_back(to_expr(key, DataType::int32()));
  }
  return out;
}

std::vector<te::Tensor> tensors_of(const std::vector<TensorHandle>& ts) {
  std::vector<te::Tensor> out;
  for (const auto& t : ts) out.push_back(t.tensor);
  return out;
}

py::list vars_list(const std::vector<tir::Var>& vars) {
  py::list out;
  for (const auto& v : vars) out.append(ExprHandle{v});
  return out;
}

std::vector<te::IterVar> reduce_axes(const py::handle& axis) {
  std::vector<te::IterVar> out;
  if (py::isinstance<ReduceAxisHandle>(axis)) {
    out.push_back(axis.cast<const ReduceAxisHandle&>().axis);
    return out;
  }
  for (auto item : py::reinterpret_borrow<py::sequence>(axis)) {
    if (!py::isinstance<ReduceAxisHandle>(item))
      throw Error("a reduction's axis must be te.reduce_axis(...) values, got " + std::string(py::str(item)));
    out.push_back(item.cast<const ReduceAxisHandle&>().axis);
  }
  return out;
}

// ---------------------------------------------------------------- builds

struct BuiltFunction {
  tir::PrimFunc func;     // as scheduled (the prim runner lowers it itself)
  tir::PrimFunc lowered;  // after the build passes
  codegen::Target target;
  std::vector<std::string> link_libs;

  codegen::CodegenOptions codegen_options() const {
    codegen::CodegenOptions o;
    o.target = target;
    o.link_libs = link_libs;
    return o;
  }
};

codegen::Target target_of(const std::string& name, std::optional<uint64_t> vtcm_capacity) {
  codegen::Target t = codegen::parse_target(name);
  if (vtcm_capacity) t.vtcm_capacity = *vtcm_capacity;
  return t;
}

std::vector<codegen::ResolvedImport> resolve(const BuiltFunction& b) {
  auto imports = codegen::collect_imports({b.lowered});
  if (b.target.is_hexagon()) return codegen::resolve_hexagon_imports(imports, b.link_libs);
  return codegen::resolve_imports(imports, b.link_libs);
}

codegen::EmitKind emit_kind_for(const std::string& path, const std::string& kind) {
  if (!kind.empty()) return codegen::parse_emit_kind(kind);
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".ll") return codegen::EmitKind::LLVMIR;
  if (ext == ".s" || ext == ".asm") return codegen::EmitKind::Assembly;
  if (ext == ".o" || ext == ".obj") return codegen::EmitKind::Object;
  if (ext == ".so") return codegen::EmitKind::SharedLibrary;
  if (ext == ".elf" || ext == ".exe") return codegen::EmitKind::Executable;
  throw Error("cannot tell what to write from the extension of " + path +
              " (.ll, .s, .o, .so, .elf); give kind= ll, asm, obj, so or exe");
}

// C library functions LLVM may call from host code (as `kiln inspect` says):
// the dynamic linker takes them from libc/libm.
bool is_c_library_symbol(const std::string& s) {
  for (const char* c :
       {"memcpy", "memmove", "memset", "expf", "exp", "sqrtf", "sqrt", "fabsf", "fabs", "fmaxf", "fminf"})
    if (s == c) return true;
  return false;
}

// The symbols of an object file or shared library and where each import
// resolves (the Hexagon runtime for a Hexagon file).
py::dict inspect_object(const std::string& path, const std::vector<std::string>& link_libs) {
  codegen::ObjectSymbols syms = codegen::read_object_symbols(path);
  std::vector<codegen::Import> imports;
  for (const auto& sym : syms.imports) imports.push_back(codegen::Import{sym, {}});
  auto resolved = syms.hexagon ? codegen::resolve_hexagon_imports(imports, link_libs)
                               : codegen::resolve_imports(imports, link_libs);
  py::list out;
  for (const auto& r : resolved) {
    py::dict d;
    d["symbol"] = r.import.symbol;
    bool libc = !syms.hexagon && r.source == codegen::ImportSource::Unresolved &&
                is_c_library_symbol(r.import.symbol);
    d["source"] = libc ? "C library" : codegen::import_source_name(r.source);
    d["library"] = r.library;
    out.append(d);
  }
  py::dict d;
  d["exports"] = syms.exports;
  d["imports"] = out;
  d["hexagon"] = syms.hexagon;
  return d;
}

py::dict param_dict(const codegen::PrimParamInfo& p) {
  py::dict d;
  d["name"] = p.name;
  d["is_buffer"] = p.is_buffer;
  d["read"] = p.read;
  d["written"] = p.written;
  d["shape"] = py::tuple(py::cast(p.shape));
  d["dtype"] = std::string(dtype_name(p.dtype));
  return d;
}

}  // namespace

void bind_te(py::module_& root) {
  py::module_ m = root.def_submodule("te", "Tensor expressions and schedules (the C++ API of tir/te/te.h).");

  py::class_<ExprHandle>(m, "Expr", "A tensor-IR expression (loop variables are expressions too).")
      .def("__str__", [](const ExprHandle& e) { return tir::print_expr(e.expr); })
      .def("__repr__", [](const ExprHandle& e) { return "<Expr " + tir::print_expr(e.expr) + ">"; })
      .def_property_readonly("dtype", [](const ExprHandle& e) { return tir::dtype_str(e.expr->dtype); })
      .def_property_readonly("name",
                             [](const ExprHandle& e) -> py::object {
                               if (auto* v = tir::as<tir::VarNode>(e.expr)) return py::str(v->name);
                               return py::none();
                             })
      .def("astype", [](const ExprHandle& e,
                        const py::object& t) { return ExprHandle{tir::cast(tir_dtype(t), e.expr)}; })
      .def("__add__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Add, a, b); })
      .def("__radd__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Add, b, a); })
      .def("__sub__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Sub, a, b); })
      .def("__rsub__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Sub, b, a); })
      .def("__mul__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Mul, a, b); })
      .def("__rmul__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Mul, b, a); })
      .def("__truediv__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Div, a, b); })
      .def("__rtruediv__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Div, b, a); })
      .def("__floordiv__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Div, a, b); })
      .def("__mod__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Mod, a, b); })
      .def("__neg__", [](const py::object& a) { return binary(tir::BinaryOp::Sub, py::int_(0), a); })
      .def("__lt__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::LT, a, b); })
      .def("__le__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::LE, a, b); })
      .def("__gt__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::GT, a, b); })
      .def("__ge__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::GE, a, b); })
      .def("__eq__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::EQ, a, b); })
      .def("__ne__", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::NE, a, b); })
      .def("__bool__", [](const ExprHandle&) -> bool {
        throw Error("an expression has no truth value in Python; use te.select(cond, a, b)");
      });

  py::class_<ReduceAxisHandle>(m, "ReduceAxis", "A reduction axis (te.reduce_axis).")
      .def_property_readonly("var", [](const ReduceAxisHandle& r) { return ExprHandle{r.axis.var}; })
      .def_property_readonly("extent", [](const ReduceAxisHandle& r) { return r.axis.extent; })
      .def("__add__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Add, a, b); })
      .def("__radd__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Add, b, a); })
      .def("__mul__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Mul, a, b); })
      .def("__rmul__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Mul, b, a); })
      .def("__sub__",
           [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Sub, a, b); })
      .def("__repr__", [](const ReduceAxisHandle& r) {
        return "<ReduceAxis " + r.axis.var->name + " extent " + std::to_string(r.axis.extent) + ">";
      });
  py::class_<ReductionHandle>(m, "Reduction", "A sum or max over reduce axes (te.sum, te.max).");

  m.def(
      "var",
      [](const std::string& name, const py::object& dtype) {
        return ExprHandle{tir::make_var(name, tir_dtype(dtype))};
      },
      py::arg("name"), py::arg("dtype") = "int32");
  m.def(
      "const",
      [](const py::object& v, const py::object& dtype) { return ExprHandle{to_expr(v, tir_dtype(dtype))}; },
      py::arg("value"), py::arg("dtype"));
  m.def(
      "cast",
      [](const py::object& v, const py::object& dtype) {
        return ExprHandle{tir::cast(tir_dtype(dtype), to_expr(v))};
      },
      py::arg("value"), py::arg("dtype"));
  m.def("select", [](const py::object& c, const py::object& t, const py::object& f) {
    auto [tv, fv] = operands(t, f);
    return ExprHandle{tir::select(to_expr(c), tv, fv)};
  });
  m.def("maximum", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Max, a, b); });
  m.def("minimum", [](const py::object& a, const py::object& b) { return binary(tir::BinaryOp::Min, a, b); });
  m.def("intrinsic", [](const std::string& name, const std::vector<py::object>& args) {
    auto i = tir::intrinsic_from_name(name);
    if (!i) throw Error("unknown intrinsic '" + name + "'");
    std::vector<tir::Expr> es;
    for (const auto& a : args)
      es.push_back(to_expr(a, es.empty() ? std::nullopt : std::optional(es[0]->dtype)));
    return ExprHandle{tir::call_intrinsic(*i, es)};
  });
  m.def("call_extern",
        [](const py::object& ret, const std::string& symbol, const std::vector<py::object>& args) {
          std::vector<tir::Expr> es;
          for (const auto& a : args) es.push_back(to_expr(a));
          return ExprHandle{tir::call_extern(tir_dtype(ret), symbol, es)};
        });

  m.def(
      "reduce_axis",
      [](int64_t extent, const std::string& name) { return ReduceAxisHandle{te::reduce_axis(extent, name)}; },
      py::arg("extent"), py::arg("name") = "k");
  m.def(
      "sum",
      [](const py::object& v, const py::object& axis) {
        return ReductionHandle{te::sum(to_expr(v), reduce_axes(axis))};
      },
      py::arg("value"), py::arg("axis"));
  m.def(
      "max",
      [](const py::object& v, const py::object& axis) {
        return ReductionHandle{te::max(to_expr(v), reduce_axes(axis))};
      },
      py::arg("value"), py::arg("axis"));

  py::class_<TensorHandle>(m, "Tensor", "A placeholder or a computed tensor.")
      .def_property_readonly("name", [](const TensorHandle& t) { return t.tensor->name; })
      .def_property_readonly("dtype", [](const TensorHandle& t) { return tir::dtype_str(t.tensor->dtype); })
      .def_property_readonly("shape",
                             [](const TensorHandle& t) { return py::tuple(py::cast(t.tensor->shape)); })
      .def_property_readonly("axis", [](const TensorHandle& t) { return vars_list(t.tensor->axes); })
      .def_property_readonly("reduce_axis",
                             [](const TensorHandle& t) {
                               py::list out;
                               for (const auto& a : t.tensor->reduction.axes) out.append(ReduceAxisHandle{a});
                               return out;
                             })
      .def_property_readonly("is_placeholder",
                             [](const TensorHandle& t) { return t.tensor->is_placeholder(); })
      .def("__getitem__", [](const TensorHandle& t,
                             const py::object& key) { return ExprHandle{(*t.tensor)(indices_of(key))}; })
      .def("__call__",
           [](const TensorHandle& t, py::args args) { return ExprHandle{(*t.tensor)(indices_of(args))}; })
      .def("__repr__", [](const TensorHandle& t) {
        std::string shape;
        for (auto d : t.tensor->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        return "<te.Tensor " + t.tensor->name + " (" + shape + ") " + tir::dtype_str(t.tensor->dtype) + ">";
      });

  m.def(
      "placeholder",
      [](const std::vector<int64_t>& shape, const py::object& dtype, const std::string& name) {
        return TensorHandle{te::placeholder(shape, tir_dtype(dtype), name)};
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder");
  m.def(
      "compute",
      [](const std::vector<int64_t>& shape, const py::function& fcompute, const std::string& name) {
        // Called here, with the GIL held: te::compute calls fcompute once.
        te::Tensor t = te::compute(
            shape,
            [&](const te::Axes& axes) -> te::Reduction {
              py::list args = vars_list(axes);
              py::object r = fcompute(*args);
              if (py::isinstance<ReductionHandle>(r)) return r.cast<const ReductionHandle&>().reduction;
              return te::Reduction{te::ReduceKind::None, to_expr(r), {}};
            },
            name);
        return TensorHandle{t};
      },
      py::arg("shape"), py::arg("fcompute"), py::arg("name") = "compute");

  py::class_<StageHandle>(m, "Stage", "How one tensor is computed: its loops, scope and place.")
      .def_property_readonly("leaves",
                             [](const StageHandle& s) {
                               py::list out;
                               for (const auto& l : s.stage->leaves()) out.append(ExprHandle{l.var});
                               return out;
                             })
      .def("leaf", [](const StageHandle& s, size_t i) { return ExprHandle{s.stage->leaf(i)}; })
      .def(
          "loops",
          [](const StageHandle& s) {
            py::list out;
            for (const auto& l : s.stage->leaves())
              out.append(py::make_tuple(l.var->name, l.extent, tir::for_kind_name(l.kind), l.reduce));
            return out;
          },
          "(name, extent, kind, is_reduce) of each loop, outermost first.")
      .def(
          "split",
          [](StageHandle& s, const py::object& loop, int64_t factor, bool tail) {
            tir::Var v = to_var(loop, "split");
            auto [outer, inner] = tail ? s.stage->split_with_tail(v, factor) : s.stage->split(v, factor);
            return py::make_tuple(ExprHandle{outer}, ExprHandle{inner});
          },
          py::arg("loop"), py::arg("factor"), py::arg("tail") = false)
      .def("fuse",
           [](StageHandle& s, const py::object& a, const py::object& b) {
             return ExprHandle{s.stage->fuse(to_var(a, "fuse"), to_var(b, "fuse"))};
           })
      .def("reorder",
           [](StageHandle& s, py::args loops) {
             std::vector<tir::Var> order;
             for (auto l : loops) order.push_back(to_var(l, "reorder"));
             s.stage->reorder(order);
           })
      .def("vectorize",
           [](StageHandle& s, const py::object& l) { s.stage->vectorize(to_var(l, "vectorize")); })
      .def("unroll", [](StageHandle& s, const py::object& l) { s.stage->unroll(to_var(l, "unroll")); })
      .def("parallel", [](StageHandle& s, const py::object& l) { s.stage->parallel(to_var(l, "parallel")); })
      .def("set_scope", [](StageHandle& s, const std::string& scope) { s.stage->set_scope(scope); })
      .def("compute_inline", [](StageHandle& s) { s.stage->compute_inline(); })
      .def("compute_root", [](StageHandle& s) { s.stage->compute_root(); })
      .def("compute_at", [](StageHandle& s, StageHandle& consumer, const py::object& loop) {
        if (consumer.schedule != s.schedule)
          throw Error("compute_at: the two stages belong to different schedules");
        s.stage->compute_at(*consumer.stage, to_var(loop, "compute_at"));
      });

  py::class_<te::Schedule, std::shared_ptr<te::Schedule>>(m, "Schedule", "A schedule of output tensors.")
      .def(py::init([](const std::vector<TensorHandle>& outputs) {
        return std::make_shared<te::Schedule>(tensors_of(outputs));
      }))
      .def("__getitem__",
           [](const std::shared_ptr<te::Schedule>& s, const TensorHandle& t) {
             return StageHandle{s, &(*s)[t.tensor]};
           })
      .def(
          "cache_read",
          [](te::Schedule& s, const TensorHandle& t, const std::string& scope,
             const std::vector<TensorHandle>& readers) {
            return TensorHandle{s.cache_read(t.tensor, scope, tensors_of(readers))};
          },
          py::arg("tensor"), py::arg("scope"), py::arg("readers"))
      .def(
          "cache_write",
          [](te::Schedule& s, const TensorHandle& t, const std::string& scope) {
            return TensorHandle{s.cache_write(t.tensor, scope)};
          },
          py::arg("tensor"), py::arg("scope"));

  // ---- prim functions and builds (top level of kiln)
  py::class_<PrimFuncHandle>(root, "PrimFunc", "A tensor-level function (prim @name).")
      .def_property_readonly("name", [](const PrimFuncHandle& f) { return f.func->name; })
      .def("__str__", [](const PrimFuncHandle& f) { return tir::print_prim_func(*f.func); })
      .def("text", [](const PrimFuncHandle& f) { return tir::print_prim_func(*f.func); })
      .def_property_readonly("params",
                             [](const PrimFuncHandle& f) {
                               py::list out;
                               for (const auto& p : codegen::prim_param_info(*f.func))
                                 out.append(param_dict(p));
                               return out;
                             })
      .def(
          "lower_for_build",
          [](const PrimFuncHandle& f, const std::string& target, std::optional<uint64_t> vtcm) {
            codegen::Target t = target_of(target, vtcm);
            CompilerLock lock;
            return PrimFuncHandle{tir::lower_for_build(f.func, codegen::tir_pass_options(t))};
          },
          py::arg("target") = "llvm", py::arg("vtcm_capacity") = std::nullopt,
          "The function after the build passes (capacity check, scratchpad and workspace lowering, ...).")
      .def(
          "run_pass",
          [](const PrimFuncHandle& f, const std::string& name) {
            return PrimFuncHandle{tir::run_tir_pass(name, f.func)};
          },
          py::arg("name"));
  root.def(
      "parse_prim",
      [](const std::string& text, const std::string& filename) {
        std::vector<PrimFuncHandle> out;
        for (auto& f : tir::parse_prim_functions(text, filename)) out.push_back({f});
        return out;
      },
      py::arg("text"), py::arg("filename") = "<string>");

  root.def(
      "lower",
      [](const std::shared_ptr<te::Schedule>& s, const std::vector<TensorHandle>& args,
         const std::string& name) { return PrimFuncHandle{te::lower(*s, tensors_of(args), name)}; },
      py::arg("schedule"), py::arg("args"), py::arg("name"));

  py::class_<BuiltFunction, std::shared_ptr<BuiltFunction>>(root, "BuiltFunction",
                                                            "A prim function built for a target.")
      .def_property_readonly("name", [](const BuiltFunction& b) { return b.func->name; })
      .def_property_readonly("target", [](const BuiltFunction& b) { return b.target.name; })
      .def_property_readonly("lowered", [](const BuiltFunction& b) { return PrimFuncHandle{b.lowered}; })
      .def_property_readonly("params",
                             [](const BuiltFunction& b) {
                               py::list out;
                               for (const auto& p : codegen::prim_param_info(*b.func))
                                 out.append(param_dict(p));
                               return out;
                             })
      .def(
          "get_source",
          [](const BuiltFunction& b, const std::string& kind) {
            codegen::EmitKind k = codegen::parse_emit_kind(kind);
            if (k != codegen::EmitKind::LLVMIR && k != codegen::EmitKind::Assembly)
              throw Error("get_source gives text (ll or asm); save() writes " + kind + " files");
            CompilerLock lock;
            return codegen::emit_text({b.lowered}, k, b.codegen_options());
          },
          py::arg("kind") = "asm")
      .def(
          "save",
          [](const BuiltFunction& b, const std::string& path, const std::string& kind) {
            codegen::EmitKind k = emit_kind_for(path, kind);
            CompilerLock lock;
            codegen::emit_to_file({b.lowered}, k, path, b.codegen_options());
          },
          py::arg("path"), py::arg("kind") = "")
      .def_property_readonly("imports",
                             [](const BuiltFunction& b) {
                               py::list out;
                               for (const auto& r : resolve(b)) {
                                 py::dict d;
                                 d["symbol"] = r.import.symbol;
                                 d["callers"] = r.import.callers;
                                 d["source"] = codegen::import_source_name(r.source);
                                 d["library"] = r.library;
                                 out.append(d);
                               }
                               return out;
                             })
      .def(
          "run",
          [](const BuiltFunction& b, const py::dict& inputs, const std::string& work_dir, int timeout) {
            std::vector<py::object> keep;
            std::map<std::string, Tensor> ins;
            for (const auto& [k, v] : inputs) {
              std::string name = py::str(k);
              ins[name] = from_numpy(v, "input " + name, keep);
            }
            codegen::PrimRunOptions ro;
            ro.target = b.target;
            ro.link_libs = b.link_libs;
            ro.vtcm_capacity = b.target.vtcm_capacity;
            ro.work_dir = work_dir;
            ro.timeout_seconds = timeout;
            codegen::PrimRunResult r;
            {
              CompilerLock lock;
              r = codegen::run_prim_function(b.func, ins, ro);
            }
            py::dict outs;
            for (const auto& [name, t] : r.outputs) outs[py::str(name)] = to_numpy(t);
            return py::make_tuple(outs, r.vtcm_pool, r.log);
          },
          py::arg("inputs"), py::arg("work_dir"), py::arg("timeout"));

  root.def(
      "build",
      [](const PrimFuncHandle& f, const std::string& target, const std::vector<std::string>& link_libs,
         std::optional<uint64_t> vtcm) {
        auto b = std::make_shared<BuiltFunction>();
        b->func = f.func;
        b->target = target_of(target, vtcm);
        b->link_libs = link_libs;
        CompilerLock lock;
        b->lowered = tir::lower_for_build(f.func, codegen::tir_pass_options(b->target));
        // An import nothing provides is an error here, naming it, not at run time.
        auto imports = codegen::collect_imports({b->lowered});
        if (b->target.is_hexagon())
          codegen::check_hexagon_imports(imports, link_libs);
        else
          codegen::check_imports(imports, link_libs);
        return b;
      },
      py::arg("func"), py::arg("target"), py::arg("link_libs"), py::arg("vtcm_capacity"));
  root.def("targets", [] { return codegen::known_target_names(); });
  root.def("inspect", &inspect_object, py::arg("path"), py::arg("link_libs"));
}

}  // namespace kiln::python
