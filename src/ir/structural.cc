// Structural equality and hashing of functions and modules.
//
// Two functions are equal when they have the same shape of bindings, the same
// ops, attributes, types and constant values, with variables matched by their
// position of definition (names do not matter).
#include <cstring>
#include <functional>
#include <unordered_map>

#include "ir/ir.h"
#include "tir/tir.h"

namespace kiln {
namespace {

void hash_combine(size_t& seed, size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

size_t hash_bytes(const void* p, size_t n) {
  return std::hash<std::string_view>()(std::string_view(static_cast<const char*>(p), n));
}

size_t hash_type(const Type& t) {
  size_t h = static_cast<size_t>(t->kind);
  if (t->is_tensor()) {
    hash_combine(h, static_cast<size_t>(t->tensor.dtype));
    for (int64_t d : t->tensor.shape) hash_combine(h, std::hash<int64_t>()(d));
    hash_combine(h, static_cast<size_t>(t->tensor.bounded_outer));
    return h;
  }
  for (const auto& f : t->fields) hash_combine(h, hash_type(f));
  return h;
}

size_t hash_attrs(const Attrs& a) {
  size_t h = a.size();
  for (const auto& [k, v] : a.items()) {
    hash_combine(h, std::hash<std::string>()(k));
    hash_combine(h, std::hash<std::string>()(attr_value_str(v)));
  }
  return h;
}

class Equal {
 public:
  bool functions(const FunctionNode& a, const FunctionNode& b) {
    if (a.name != b.name || a.attrs != b.attrs || !type_equal(a.ret_type, b.ret_type)) return false;
    if (a.params.size() != b.params.size() || a.bindings.size() != b.bindings.size()) return false;
    for (size_t i = 0; i < a.params.size(); ++i)
      if (!define(a.params[i], b.params[i])) return false;
    for (size_t i = 0; i < a.bindings.size(); ++i) {
      if (!expr(a.bindings[i].value, b.bindings[i].value)) return false;
      if (!define(a.bindings[i].var, b.bindings[i].var)) return false;
    }
    return expr(a.result, b.result);
  }

 private:
  bool define(const Var& a, const Var& b) {
    if (!type_equal(a->type, b->type)) return false;
    var_map_[a.get()] = b.get();
    return true;
  }

  bool expr(const Expr& a, const Expr& b) {
    if (a->kind != b->kind || !type_equal(a->type, b->type)) return false;
    switch (a->kind) {
      case ExprKind::Var: {
        auto it = var_map_.find(a.get());
        return it != var_map_.end() && it->second == b.get();
      }
      case ExprKind::Constant: {
        auto* ca = as<ConstantNode>(a);
        auto* cb = as<ConstantNode>(b);
        return ca->name == cb->name && ca->value.bitwise_equal(cb->value);
      }
      case ExprKind::Call: {
        auto* ca = as<CallNode>(a);
        auto* cb = as<CallNode>(b);
        if (ca->op != cb->op || ca->callee != cb->callee || ca->attrs != cb->attrs) return false;
        return exprs(ca->args, cb->args);
      }
      case ExprKind::Tuple:
        return exprs(as<TupleNode>(a)->fields, as<TupleNode>(b)->fields);
      case ExprKind::TupleGetItem: {
        auto* ta = as<TupleGetItemNode>(a);
        auto* tb = as<TupleGetItemNode>(b);
        return ta->index == tb->index && expr(ta->tuple, tb->tuple);
      }
    }
    return false;
  }

  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }

  std::unordered_map<const ExprNode*, const ExprNode*> var_map_;
};

class Hasher {
 public:
  size_t function(const FunctionNode& f) {
    size_t h = std::hash<std::string>()(f.name);
    hash_combine(h, hash_attrs(f.attrs));
    for (const auto& p : f.params) define(p, h);
    for (const auto& b : f.bindings) {
      hash_combine(h, expr(b.value));
      define(b.var, h);
    }
    hash_combine(h, expr(f.result));
    return h;
  }

 private:
  void define(const Var& v, size_t& h) {
    var_index_[v.get()] = var_index_.size();
    hash_combine(h, hash_type(v->type));
  }

  size_t expr(const Expr& e) {
    size_t h = static_cast<size_t>(e->kind);
    hash_combine(h, hash_type(e->type));
    switch (e->kind) {
      case ExprKind::Var: {
        auto it = var_index_.find(e.get());
        hash_combine(h, it == var_index_.end() ? ~size_t{0} : it->second);
        break;
      }
      case ExprKind::Constant: {
        auto* c = as<ConstantNode>(e);
        hash_combine(h, std::hash<std::string>()(c->name));
        hash_combine(h, hash_bytes(c->value.raw(), c->value.nbytes()));
        break;
      }
      case ExprKind::Call: {
        auto* c = as<CallNode>(e);
        hash_combine(h, std::hash<std::string>()(c->op ? c->op->name : "@" + c->callee));
        hash_combine(h, hash_attrs(c->attrs));
        for (const auto& a : c->args) hash_combine(h, expr(a));
        break;
      }
      case ExprKind::Tuple:
        for (const auto& f : as<TupleNode>(e)->fields) hash_combine(h, expr(f));
        break;
      case ExprKind::TupleGetItem: {
        auto* t = as<TupleGetItemNode>(e);
        hash_combine(h, static_cast<size_t>(t->index));
        hash_combine(h, expr(t->tuple));
        break;
      }
    }
    return h;
  }

  std::unordered_map<const ExprNode*, size_t> var_index_;
};

}  // namespace

bool structural_equal(const FunctionNode& a, const FunctionNode& b) { return Equal().functions(a, b); }

bool structural_equal(const Module& a, const Module& b) {
  if (a.attrs != b.attrs || a.functions.size() != b.functions.size()) return false;
  for (size_t i = 0; i < a.functions.size(); ++i)
    if (!structural_equal(*a.functions[i], *b.functions[i])) return false;
  if (a.prim_functions.size() != b.prim_functions.size()) return false;
  for (size_t i = 0; i < a.prim_functions.size(); ++i)
    if (!tir::structural_equal(*a.prim_functions[i], *b.prim_functions[i])) return false;
  return true;
}

size_t structural_hash(const FunctionNode& f) { return Hasher().function(f); }

size_t structural_hash(const Module& m) {
  size_t h = hash_attrs(m.attrs);
  for (const auto& f : m.functions) hash_combine(h, structural_hash(*f));
  for (const auto& f : m.prim_functions) hash_combine(h, tir::structural_hash(*f));
  return h;
}

}  // namespace kiln
