// Visitor and mutator over graph expressions, generated from KILN_EXPR_KINDS.
//
// ExprVisitor walks an expression tree (not through variables: a Var is a
// leaf). ExprMutator rebuilds expressions bottom-up and returns the original
// node when nothing below it changed, so a pass that changes nothing returns
// the same function. Its mutate_function() walks a function's bindings in
// order and lets a subclass rewrite or drop each one.
#pragma once

#include <optional>
#include <unordered_map>

#include "ir/ir.h"

namespace kiln {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  void visit(const Expr& e);
  // Visits every binding value and the result.
  void visit_function(const FunctionNode& f);

 protected:
#define KILN_VISIT_DECL(name) virtual void visit_##name(const name##Node& n);
  KILN_EXPR_KINDS(KILN_VISIT_DECL)
#undef KILN_VISIT_DECL
};

class ExprMutator {
 public:
  // `module` resolves the types of callees when a function call is rebuilt.
  explicit ExprMutator(const Module* module = nullptr) : module_(module) {}
  virtual ~ExprMutator() = default;

  Expr mutate(const Expr& e);
  Function mutate_function(const Function& f);

 protected:
#define KILN_MUTATE_DECL(name) virtual Expr mutate_##name(const Expr& e, const name##Node& n);
  KILN_EXPR_KINDS(KILN_MUTATE_DECL)
#undef KILN_MUTATE_DECL

  // Decides what becomes of one binding whose value was mutated to `value`.
  // The default keeps it (with a fresh variable when the type changed).
  // Return nullopt to drop it; then map_var() must say what replaces its uses.
  virtual std::optional<Binding> rewrite_binding(const Binding& old, Expr value);

  // From now on, uses of `from` become `to`.
  void map_var(const Var& from, Expr to) { var_map_[from.get()] = std::move(to); }

  const Module* module_;

 private:
  std::unordered_map<const ExprNode*, Expr> var_map_;
};

// Appends the variables `e` uses, in order of appearance (with repeats).
void collect_used_vars(const Expr& e, std::vector<const ExprNode*>& out);

// Rebuilds a call with new arguments (op calls re-run inference).
Expr rebuild_call(const CallNode& c, std::vector<Expr> args, const Module* module);

}  // namespace kiln
