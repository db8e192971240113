// The IR verifier. Nodes are type-checked when they are made, so a verifier
// failure means a pass built an inconsistent module: reused a variable,
// referred to a variable outside its scope, or let a binding's declared type
// drift from its value's.
#include <unordered_set>

#include "ir/visitor.h"

namespace kiln {
namespace {

class Verifier : public ExprVisitor {
 public:
  explicit Verifier(const Module& m) : module_(m) {}

  void function(const FunctionNode& f) {
    fn_ = &f;
    defined_.clear();
    for (const auto& p : f.params) define(*p);
    for (const auto& b : f.bindings) {
      where_ = "%" + b.var->name;
      visit(b.value);
      check_value_kind(b);
      if (!type_equal(b.var->type, b.value->type))
        fail("binding %" + b.var->name + " has type " + type_str(b.var->type) + " but its value has type " +
             type_str(b.value->type));
      define(*b.var);
    }
    where_ = "return";
    visit(f.result);
    if (!type_equal(f.ret_type, f.result->type))
      fail("returns " + type_str(f.result->type) + " but declares " + type_str(f.ret_type));
  }

 private:
  [[noreturn]] void fail(const std::string& msg) {
    throw Error("verifier: @" + fn_->name + (where_.empty() ? "" : " (" + where_ + ")") + ": " + msg);
  }

  void define(const VarNode& v) {
    if (!defined_.insert(&v).second) fail("variable %" + v.name + " is assigned twice");
  }

  void check_value_kind(const Binding& b) {
    if (b.value->kind == ExprKind::Var && !defined_.count(static_cast<const VarNode*>(b.value.get())))
      fail("binding of an undefined variable");
  }

  void visit_Var(const VarNode& v) override {
    if (!defined_.count(&v)) fail("variable %" + v.name + " is used before it is defined");
  }

  void visit_Call(const CallNode& c) override {
    ExprVisitor::visit_Call(c);
    if (c.is_op_call()) {
      std::vector<TensorDesc> in;
      for (const auto& a : c.args) {
        if (!a->type->is_tensor()) fail(c.op->name + " has a tuple argument");
        in.push_back(a->type->tensor);
      }
      std::vector<TensorDesc> out;
      try {
        out = infer_op(*c.op, in, c.attrs);
      } catch (const Error& e) {
        fail(e.message());
      }
      if (out != flatten_type(c.type) || (c.type->is_tuple() != (c.op->tuple_output || out.size() != 1)))
        fail(c.op->name + " is typed " + type_str(c.type) + " but its inputs infer another type");
      return;
    }
    const FunctionNode* callee = module_.find(c.callee);
    if (!callee) fail("call of unknown function @" + c.callee);
    if (callee->params.size() != c.args.size())
      fail("@" + c.callee + " called with the wrong number of arguments");
    for (size_t i = 0; i < c.args.size(); ++i)
      if (!type_equal(callee->params[i]->type, c.args[i]->type))
        fail("@" + c.callee + " argument " + std::to_string(i) + " has the wrong type");
    if (!type_equal(callee->ret_type, c.type)) fail("@" + c.callee + " call has the wrong result type");
  }

  const Module& module_;
  const FunctionNode* fn_ = nullptr;
  std::string where_;
  std::unordered_set<const VarNode*> defined_;
};

}  // namespace

void verify_module(const Module& m) {
  std::unordered_set<std::string> names;
  for (const auto& f : m.functions) {
    if (!names.insert(f->name).second) throw Error("verifier: function @" + f->name + " is defined twice");
    Verifier(m).function(*f);
  }
}

}  // namespace kiln
