// Types, node constructors (with type inference) and Module.
#include "ir/ir.h"

#include <algorithm>

namespace kiln {

// ---------------------------------------------------------------- types

Type tensor_type(Shape shape, DType dtype) {
  auto t = std::make_shared<TypeNode>();
  t->kind = TypeNode::Kind::Tensor;
  t->tensor = TensorDesc{std::move(shape), dtype};
  return t;
}

Type tensor_type(const TensorDesc& desc) {
  auto t = std::make_shared<TypeNode>();
  t->kind = TypeNode::Kind::Tensor;
  t->tensor = desc;
  return t;
}

Type tuple_type(std::vector<Type> fields) {
  auto t = std::make_shared<TypeNode>();
  t->kind = TypeNode::Kind::Tuple;
  t->fields = std::move(fields);
  return t;
}

bool type_equal(const Type& a, const Type& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  if (a->is_tensor()) return a->tensor == b->tensor && a->dim_names == b->dim_names;
  if (a->fields.size() != b->fields.size()) return false;
  for (size_t i = 0; i < a->fields.size(); ++i)
    if (!type_equal(a->fields[i], b->fields[i])) return false;
  return true;
}

std::string type_str(const Type& t) {
  if (!t) return "<untyped>";
  if (t->is_tuple()) {
    std::string s = "(";
    for (size_t i = 0; i < t->fields.size(); ++i) s += (i ? ", " : "") + type_str(t->fields[i]);
    if (t->fields.size() == 1) s += ",";
    return s + ")";
  }
  std::string s = "Tensor[(";
  size_t sym = 0;
  for (size_t i = 0; i < t->tensor.shape.size(); ++i) {
    if (i) s += ", ";
    int64_t d = t->tensor.shape[i];
    if (d < 0)
      s += "?" + (sym < t->dim_names.size() ? t->dim_names[sym++] : std::string());
    else if (i == 0 && t->tensor.bounded_outer)
      s += "<=" + std::to_string(d);
    else
      s += std::to_string(d);
  }
  if (t->tensor.shape.size() == 1) s += ",";
  return s + "), " + std::string(dtype_name(t->tensor.dtype)) + "]";
}

static void flatten_into(const Type& t, std::vector<TensorDesc>& out) {
  if (t->is_tensor()) {
    out.push_back(t->tensor);
    return;
  }
  for (const auto& f : t->fields) flatten_into(f, out);
}

std::vector<TensorDesc> flatten_type(const Type& t) {
  std::vector<TensorDesc> out;
  flatten_into(t, out);
  return out;
}

// ---------------------------------------------------------------- expressions

const char* expr_kind_name(ExprKind k) {
  switch (k) {
#define KILN_NAME_CASE(name) \
  case ExprKind::name:       \
    return #name;
    KILN_EXPR_KINDS(KILN_NAME_CASE)
#undef KILN_NAME_CASE
  }
  return "?";
}

ConstantNode::ConstantNode(Tensor v, std::string n)
    : ExprNode(ExprKind::Constant, tensor_type(v.shape(), v.dtype())),
      value(std::move(v)),
      name(std::move(n)) {}

Var make_var(std::string name, Type type) {
  KILN_ASSERT(type != nullptr, "variable without a type");
  return std::make_shared<VarNode>(std::move(name), std::move(type));
}

Expr make_constant(Tensor value, std::string name) {
  KILN_ASSERT(value.defined(), "constant without a value");
  return std::make_shared<ConstantNode>(std::move(value), std::move(name));
}

static Error at(const SourceLoc& loc, const std::string& msg) { return Error(msg, loc); }

Expr make_op_call(const OpDef& op, std::vector<Expr> args, const Attrs& attrs, const SourceLoc& loc) {
  std::vector<TensorDesc> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Type& t = args[i]->type;
    if (!t->is_tensor())
      throw at(loc, op.name + ": argument " + std::to_string(i) + " is a tuple " + type_str(t) +
                        ", expected a tensor");
    for (int64_t d : t->tensor.shape)
      if (d < 0)
        throw at(loc, op.name + ": argument " + std::to_string(i) + " has a symbolic shape " + type_str(t) +
                          "; bind it to a static shape first");
    inputs.push_back(t->tensor);
  }
  Attrs norm;
  std::vector<TensorDesc> outs;
  try {
    norm = normalize_attrs(op, attrs);
    outs = infer_op(op, inputs, norm);
  } catch (const Error& e) {
    if (e.loc().known() || !loc.known()) throw;
    throw Error(e.message(), loc, e.context());
  }
  Type type;
  if (outs.size() == 1 && !op.tuple_output) {
    type = tensor_type(outs[0]);
  } else {
    std::vector<Type> fields;
    for (const auto& d : outs) fields.push_back(tensor_type(d));
    type = tuple_type(std::move(fields));
  }
  auto call = std::make_shared<CallNode>(type);
  call->op = &op;
  call->args = std::move(args);
  call->attrs = std::move(norm);
  return call;
}

Expr make_op_call(std::string_view op_name, std::vector<Expr> args, const Attrs& attrs,
                  const SourceLoc& loc) {
  const OpDef* op = find_op(op_name);
  if (!op) throw at(loc, "unknown op '" + std::string(op_name) + "' (`kiln ops` lists the known ops)");
  return make_op_call(*op, std::move(args), attrs, loc);
}

Expr make_function_call(std::string callee, const std::vector<Type>& param_types, Type ret_type,
                        std::vector<Expr> args, const SourceLoc& loc) {
  if (param_types.size() != args.size())
    throw at(loc, "@" + callee + " takes " + std::to_string(param_types.size()) + " argument(s), got " +
                      std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!type_equal(param_types[i], args[i]->type))
      throw at(loc, "@" + callee + ": argument " + std::to_string(i) + " has type " +
                        type_str(args[i]->type) + ", expected " + type_str(param_types[i]));
  auto call = std::make_shared<CallNode>(std::move(ret_type));
  call->callee = std::move(callee);
  call->args = std::move(args);
  return call;
}

Expr make_tuple(std::vector<Expr> fields) {
  std::vector<Type> types;
  for (const auto& f : fields) types.push_back(f->type);
  return std::make_shared<TupleNode>(tuple_type(std::move(types)), std::move(fields));
}

Expr make_tuple_get_item(Expr tuple, int64_t index, const SourceLoc& loc) {
  const Type& t = tuple->type;
  if (!t->is_tuple())
    throw at(loc, "cannot take field " + std::to_string(index) + " of a non-tuple " + type_str(t));
  if (index < 0 || index >= static_cast<int64_t>(t->fields.size()))
    throw at(loc, "tuple index " + std::to_string(index) + " out of range for " + type_str(t));
  Type ft = t->fields[static_cast<size_t>(index)];
  return std::make_shared<TupleGetItemNode>(std::move(ft), std::move(tuple), index);
}

Function make_function(std::string name, std::vector<Var> params, std::vector<Binding> bindings, Expr result,
                       Attrs attrs, Type declared_ret, const SourceLoc& loc) {
  KILN_ASSERT(result != nullptr, "function without a result");
  if (declared_ret && !type_equal(declared_ret, result->type))
    throw at(loc, "@" + name + " declares return type " + type_str(declared_ret) + " but returns " +
                      type_str(result->type));
  auto f = std::make_shared<FunctionNode>();
  f->name = std::move(name);
  f->params = std::move(params);
  f->bindings = std::move(bindings);
  f->ret_type = declared_ret ? declared_ret : result->type;
  f->result = std::move(result);
  f->attrs = std::move(attrs);
  return f;
}

// ---------------------------------------------------------------- module

const FunctionNode* Module::find(const std::string& name) const {
  for (const auto& f : functions)
    if (f->name == name) return f.get();
  return nullptr;
}

Function Module::find_function(const std::string& name) const {
  for (const auto& f : functions)
    if (f->name == name) return f;
  return nullptr;
}

void Module::set(Function f) {
  for (auto& g : functions)
    if (g->name == f->name) {
      g = std::move(f);
      return;
    }
  functions.push_back(std::move(f));
}

void Module::remove(const std::string& name) {
  functions.erase(
      std::remove_if(functions.begin(), functions.end(), [&](const Function& f) { return f->name == name; }),
      functions.end());
}

}  // namespace kiln
