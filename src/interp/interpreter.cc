#include "interp/interpreter.h"

#include <unordered_map>

namespace kiln {

std::vector<Tensor> flatten_value(const Value& v) {
  if (!v.is_tuple) return {v.tensor};
  std::vector<Tensor> out;
  for (const auto& f : v.fields)
    for (auto& t : flatten_value(f)) out.push_back(std::move(t));
  return out;
}

namespace {

// Deep enough for any sane module; guards against recursion through @calls.
constexpr int kMaxCallDepth = 256;

void check_matches(const Value& v, const Type& t, const std::string& what) {
  if (t->is_tuple()) {
    KILN_CHECK(v.is_tuple && v.fields.size() == t->fields.size(), what, " must be a tuple ", type_str(t));
    for (size_t i = 0; i < v.fields.size(); ++i)
      check_matches(v.fields[i], t->fields[i], what + "." + std::to_string(i));
    return;
  }
  KILN_CHECK(!v.is_tuple && v.tensor.defined(), what, " must be a tensor ", type_str(t));
  const TensorDesc& want = t->tensor;
  KILN_CHECK(v.tensor.dtype() == want.dtype, what, " has dtype ", dtype_name(v.tensor.dtype()), ", expected ",
             dtype_name(want.dtype));
  bool shape_ok = v.tensor.shape().size() == want.shape.size();
  for (size_t i = 0; shape_ok && i < want.shape.size(); ++i) {
    int64_t got = v.tensor.shape()[i];
    // A bounded dynamic leading axis holds any extent up to its bound.
    bool bounded = i == 0 && want.bounded_outer;
    shape_ok = want.shape[i] < 0 || want.shape[i] == got || (bounded && got <= want.shape[i]);
  }
  KILN_CHECK(shape_ok, what, " has shape ", shape_str(v.tensor.shape()), ", expected ", type_str(t));
}

class Interpreter {
 public:
  Interpreter(const Module& m, const InterpretOptions& opts) : module_(m), opts_(opts) {}

  Value call(const FunctionNode& fn, const std::vector<Value>& args, int depth) {
    KILN_CHECK(depth < kMaxCallDepth, "call depth exceeds ", kMaxCallDepth, " at @", fn.name,
               " (recursive functions are not supported)");
    KILN_CHECK(args.size() == fn.params.size(), "@", fn.name, " takes ", fn.params.size(),
               " argument(s), got ", args.size());
    std::unordered_map<const ExprNode*, Value> env;
    for (size_t i = 0; i < args.size(); ++i) {
      check_matches(args[i], fn.params[i]->type, "@" + fn.name + " argument %" + fn.params[i]->name);
      env[fn.params[i].get()] = args[i];
    }
    for (const Binding& b : fn.bindings) {
      Value v;
      try {
        v = eval(b.value, env, depth);
      } catch (const Error& err) {
        if (err.message().rfind("in @", 0) == 0) throw;
        throw Error("in @" + fn.name + ", %" + b.var->name + ": " + err.message(), err.loc(), err.context());
      }
      if (opts_.observer) opts_.observer(fn, b, v);
      env[b.var.get()] = std::move(v);
    }
    return eval(fn.result, env, depth);
  }

 private:
  Value eval(const Expr& e, std::unordered_map<const ExprNode*, Value>& env, int depth) {
    switch (e->kind) {
      case ExprKind::Var: {
        auto it = env.find(e.get());
        KILN_ASSERT(it != env.end(), "variable %" + as<VarNode>(e)->name + " used before definition");
        return it->second;
      }
      case ExprKind::Constant:
        return Value::of(as<ConstantNode>(e)->value);
      case ExprKind::Tuple: {
        std::vector<Value> fields;
        for (const auto& f : as<TupleNode>(e)->fields) fields.push_back(eval(f, env, depth));
        return Value::tuple(std::move(fields));
      }
      case ExprKind::TupleGetItem: {
        auto* t = as<TupleGetItemNode>(e);
        Value tup = eval(t->tuple, env, depth);
        KILN_ASSERT(tup.is_tuple && t->index < static_cast<int64_t>(tup.fields.size()), "bad tuple access");
        return tup.fields[static_cast<size_t>(t->index)];
      }
      case ExprKind::Call:
        return eval_call(*as<CallNode>(e), env, depth);
    }
    KILN_ASSERT(false, "unknown expression kind");
  }

  Value eval_call(const CallNode& c, std::unordered_map<const ExprNode*, Value>& env, int depth) {
    std::vector<Value> args;
    for (const auto& a : c.args) args.push_back(eval(a, env, depth));
    if (!c.is_op_call()) {
      const FunctionNode* callee = module_.find(c.callee);
      KILN_CHECK(callee != nullptr, "call of unknown function @", c.callee);
      return call(*callee, args, depth + 1);
    }
    std::vector<Tensor> inputs;
    for (auto& a : args) {
      KILN_ASSERT(!a.is_tuple, c.op->name + " got a tuple argument");
      inputs.push_back(a.tensor);
    }
    std::vector<Tensor> outs = run_op(*c.op, inputs, c.attrs);
    if (!c.type->is_tuple()) return Value::of(std::move(outs.at(0)));
    std::vector<Value> fields;
    for (auto& t : outs) fields.push_back(Value::of(std::move(t)));
    return Value::tuple(std::move(fields));
  }

  const Module& module_;
  const InterpretOptions& opts_;
};

}  // namespace

Value interpret_value(const Module& m, const std::string& function, const std::vector<Value>& args,
                      const InterpretOptions& opts) {
  const FunctionNode* fn = m.find(function);
  KILN_CHECK(fn != nullptr, "the module has no function @", function);
  return Interpreter(m, opts).call(*fn, args, 0);
}

std::vector<Tensor> interpret(const Module& m, const std::string& function, const std::vector<Tensor>& args,
                              const InterpretOptions& opts) {
  std::vector<Value> vals;
  for (const auto& t : args) vals.push_back(Value::of(t));
  return flatten_value(interpret_value(m, function, vals, opts));
}

}  // namespace kiln
