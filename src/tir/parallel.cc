#include "tir/parallel.h"

#include <unordered_set>

#include "tir/mutator.h"

namespace kiln::tir {

namespace {

class FindReturn : public Visitor {
 public:
  bool found = false;

 protected:
  void visit_Return(const ReturnNode&) override { found = true; }
};

class BodyInputs : public Visitor {
 public:
  std::vector<const VarNode*> vars;
  void define(const VarNode* v) { defined_.insert(v); }

 protected:
  void visit_Var(const VarNode& n) override { use(&n); }
  void visit_BufferLoad(const BufferLoadNode& n) override {
    use(n.buffer->data.get());
    Visitor::visit_BufferLoad(n);
  }
  void visit_BufferStore(const BufferStoreNode& n) override {
    use(n.buffer->data.get());
    Visitor::visit_BufferStore(n);
  }
  void visit_DeclBuffer(const DeclBufferNode& n) override {
    use(n.buffer->data.get());
    Visitor::visit_DeclBuffer(n);
  }
  void visit_Allocate(const AllocateNode& n) override {
    for (const Expr& e : n.buffer->shape) visit(e);  // codegen evaluates the size
    define(n.buffer->data.get());
    Visitor::visit_Allocate(n);
  }
  void visit_For(const ForNode& n) override {
    visit(n.min);
    visit(n.extent);
    define(n.var.get());
    visit(n.body);
  }
  void visit_LetStmt(const LetStmtNode& n) override {
    visit(n.value);
    define(n.var.get());
    visit(n.body);
  }

 private:
  void use(const VarNode* v) {
    if (!defined_.count(v) && seen_.insert(v).second) vars.push_back(v);
  }
  std::unordered_set<const VarNode*> defined_, seen_;
};

bool is_parallel_status(const Expr& e) {
  auto* c = as<CallNode>(e);
  return c && c->call_kind == CallKind::Intrinsic &&
         intrinsic_from_name(c->name) == Intrinsic::ParallelStatus;
}

}  // namespace

bool is_parallel_loop(const Stmt& s) {
  auto* f = as<ForNode>(s);
  return f && f->for_kind == ForKind::Parallel;
}

bool contains_return(const Stmt& s) {
  FindReturn v;
  v.visit(s);
  return v.found;
}

Stmt parallel_failure_check() {
  return if_then_else(binary(BinaryOp::NE, call_intrinsic(Intrinsic::ParallelStatus, {}), int_imm(0)),
                      return_stmt(call_intrinsic(Intrinsic::ParallelStatus, {})));
}

bool is_parallel_failure_check(const Stmt& s) {
  auto* i = as<IfThenElseNode>(s);
  if (!i || i->else_case) return false;
  auto* c = as<BinaryNode>(i->cond);
  return c && c->op == BinaryOp::NE && is_parallel_status(c->a) && is_const_int(c->b, 0);
}

std::vector<const VarNode*> loop_body_inputs(const ForNode& loop) {
  BodyInputs inputs;
  inputs.define(loop.var.get());
  inputs.visit(loop.body);
  return inputs.vars;
}

}  // namespace kiln::tir
