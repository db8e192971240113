// Visitor and mutator over prim-function bodies, generated from the node
// lists in tir.h.
//
// Mutator rebuilds bottom-up and returns the original node when nothing below
// it changed, so a pass that changes nothing returns the same function. A pass
// overrides the mutate_X of the kinds it rewrites and calls the base for the
// rest.
#pragma once

#include <unordered_map>

#include "tir/tir.h"

namespace kiln::tir {

class Visitor {
 public:
  virtual ~Visitor() = default;
  void visit(const Expr& e);
  void visit(const Stmt& s);

 protected:
#define KILN_TIR_VISIT_DECL(name) virtual void visit_##name(const name##Node& n);
  KILN_TIR_EXPR_KINDS(KILN_TIR_VISIT_DECL)
  KILN_TIR_STMT_KINDS(KILN_TIR_VISIT_DECL)
#undef KILN_TIR_VISIT_DECL
};

class Mutator {
 public:
  virtual ~Mutator() = default;
  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);
  // Mutates the body (and buffer shapes of parameters are kept).
  PrimFunc mutate_function(const PrimFunc& f);

 protected:
#define KILN_TIR_MUTATE_DECL(name) virtual Expr mutate_##name(const Expr& e, const name##Node& n);
  KILN_TIR_EXPR_KINDS(KILN_TIR_MUTATE_DECL)
#undef KILN_TIR_MUTATE_DECL
#define KILN_TIR_MUTATE_DECL(name) virtual Stmt mutate_##name(const Stmt& s, const name##Node& n);
  KILN_TIR_STMT_KINDS(KILN_TIR_MUTATE_DECL)
#undef KILN_TIR_MUTATE_DECL

  // Buffers referenced by loads and stores go through here (flattening maps
  // them to new buffers); the default keeps them.
  virtual Buffer mutate_buffer_ref(const Buffer& b) { return b; }

  // Helpers: mutate a list, reporting whether anything changed.
  std::vector<Expr> mutate_all(const std::vector<Expr>& v, bool* changed);
};

// Replaces uses of variables (by node) with expressions.
Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, Expr>& map);
Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map);

// Whether `s` defines a name (a loop, a let, a buffer): copies of it (an
// unrolled or partitioned loop's bodies) would each need fresh names.
bool defines_names(const Stmt& s);

// Whether `e` reads the variable `v`.
bool uses_var(const Expr& e, const Var& v);

}  // namespace kiln::tir
