// Structural equality and hashing of prim functions: same shape of tree, same
// constants and types, variables and buffers matched where they are defined
// (their names do not count). The hash follows the equality exactly: a
// defined variable or buffer hashes by the order of its definition, so
// functions equal up to renaming hash alike.
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "tir/tir.h"

namespace kiln::tir {

namespace {

class Equal {
 public:
  bool func(const PrimFuncNode& a, const PrimFuncNode& b) {
    if (a.name != b.name || a.params.size() != b.params.size()) return false;
    for (size_t i = 0; i < a.params.size(); ++i) {
      const PrimParam& p = a.params[i];
      const PrimParam& q = b.params[i];
      if (bool(p.buffer) != bool(q.buffer)) return false;
      if (p.buffer ? !def_buffer(p.buffer, q.buffer) : !def_var(p.var, q.var)) return false;
    }
    return stmt(a.body, b.body);
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
      case StmtKind::For: {
        auto &x = static_cast<const ForNode&>(*a), &y = static_cast<const ForNode&>(*b);
        return x.for_kind == y.for_kind && expr(x.min, y.min) && expr(x.extent, y.extent) &&
               def_var(x.var, y.var) && stmt(x.body, y.body);
      }
      case StmtKind::Allocate: {
        auto &x = static_cast<const AllocateNode&>(*a), &y = static_cast<const AllocateNode&>(*b);
        return def_buffer(x.buffer, y.buffer) && stmt(x.body, y.body);
      }
      case StmtKind::DeclBuffer: {
        auto &x = static_cast<const DeclBufferNode&>(*a), &y = static_cast<const DeclBufferNode&>(*b);
        return expr(x.buffer->data, y.buffer->data) && def_buffer_fields(x.buffer, y.buffer) &&
               stmt(x.body, y.body);
      }
      case StmtKind::BufferStore: {
        auto &x = static_cast<const BufferStoreNode&>(*a), &y = static_cast<const BufferStoreNode&>(*b);
        return same_buffer(x.buffer, y.buffer) && exprs(x.indices, y.indices) && expr(x.value, y.value);
      }
      case StmtKind::LetStmt: {
        auto &x = static_cast<const LetStmtNode&>(*a), &y = static_cast<const LetStmtNode&>(*b);
        return expr(x.value, y.value) && def_var(x.var, y.var) && stmt(x.body, y.body);
      }
      case StmtKind::IfThenElse: {
        auto &x = static_cast<const IfThenElseNode&>(*a), &y = static_cast<const IfThenElseNode&>(*b);
        return expr(x.cond, y.cond) && stmt(x.then_case, y.then_case) && stmt(x.else_case, y.else_case);
      }
      case StmtKind::Seq: {
        auto &x = static_cast<const SeqNode&>(*a), &y = static_cast<const SeqNode&>(*b);
        if (x.stmts.size() != y.stmts.size()) return false;
        for (size_t i = 0; i < x.stmts.size(); ++i)
          if (!stmt(x.stmts[i], y.stmts[i])) return false;
        return true;
      }
      case StmtKind::Evaluate:
        return expr(static_cast<const EvaluateNode&>(*a).value, static_cast<const EvaluateNode&>(*b).value);
      case StmtKind::Return:
        return expr(static_cast<const ReturnNode&>(*a).value, static_cast<const ReturnNode&>(*b).value);
    }
    return false;
  }

  bool expr(const Expr& a, const Expr& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->dtype != b->dtype) return false;
    switch (a->kind) {
      case ExprKind::IntImm:
        return static_cast<const IntImmNode&>(*a).value == static_cast<const IntImmNode&>(*b).value;
      case ExprKind::FloatImm: {
        // Bitwise, so nan equals nan and 0.0 differs from -0.0.
        double x = static_cast<const FloatImmNode&>(*a).value, y = static_cast<const FloatImmNode&>(*b).value;
        return std::memcmp(&x, &y, sizeof x) == 0;
      }
      case ExprKind::StringImm:
        return static_cast<const StringImmNode&>(*a).value == static_cast<const StringImmNode&>(*b).value;
      case ExprKind::Var: {
        auto it = vars_.find(a.get());
        if (it != vars_.end()) return it->second == b.get();
        return a == b;  // free in both: the same node
      }
      case ExprKind::Binary: {
        auto &x = static_cast<const BinaryNode&>(*a), &y = static_cast<const BinaryNode&>(*b);
        return x.op == y.op && expr(x.a, y.a) && expr(x.b, y.b);
      }
      case ExprKind::Not:
        return expr(static_cast<const NotNode&>(*a).a, static_cast<const NotNode&>(*b).a);
      case ExprKind::Cast:
        return expr(static_cast<const CastNode&>(*a).value, static_cast<const CastNode&>(*b).value);
      case ExprKind::Select: {
        auto &x = static_cast<const SelectNode&>(*a), &y = static_cast<const SelectNode&>(*b);
        return expr(x.cond, y.cond) && expr(x.true_value, y.true_value) && expr(x.false_value, y.false_value);
      }
      case ExprKind::BufferLoad: {
        auto &x = static_cast<const BufferLoadNode&>(*a), &y = static_cast<const BufferLoadNode&>(*b);
        return same_buffer(x.buffer, y.buffer) && exprs(x.indices, y.indices);
      }
      case ExprKind::Call: {
        auto &x = static_cast<const CallNode&>(*a), &y = static_cast<const CallNode&>(*b);
        return x.call_kind == y.call_kind && x.name == y.name && exprs(x.args, y.args);
      }
      case ExprKind::Ramp: {
        auto &x = static_cast<const RampNode&>(*a), &y = static_cast<const RampNode&>(*b);
        return x.lanes == y.lanes && expr(x.base, y.base) && expr(x.stride, y.stride);
      }
      case ExprKind::Broadcast: {
        auto &x = static_cast<const BroadcastNode&>(*a), &y = static_cast<const BroadcastNode&>(*b);
        return x.lanes == y.lanes && expr(x.value, y.value);
      }
    }
    return false;
  }

 private:
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }

  bool def_var(const Var& a, const Var& b) {
    if (a->dtype != b->dtype) return false;
    vars_[a.get()] = b.get();
    return true;
  }

  bool def_buffer_fields(const Buffer& a, const Buffer& b) {
    if (a->dtype != b->dtype || a->scope != b->scope || a->alignment != b->alignment) return false;
    if (!exprs(a->shape, b->shape) || !exprs(a->strides, b->strides)) return false;
    buffers_[a.get()] = b.get();
    return true;
  }

  // A buffer that defines its own data handle (parameter, allocate).
  bool def_buffer(const Buffer& a, const Buffer& b) {
    return def_var(a->data, b->data) && def_buffer_fields(a, b);
  }

  bool same_buffer(const Buffer& a, const Buffer& b) {
    auto it = buffers_.find(a.get());
    return it != buffers_.end() ? it->second == b.get() : a == b;
  }

  std::unordered_map<const void*, const void*> vars_;
  std::unordered_map<const void*, const void*> buffers_;
};

void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

class Hasher {
 public:
  size_t func(const PrimFuncNode& f) {
    size_t h = std::hash<std::string>()(f.name);
    mix(h, f.params.size());
    for (const PrimParam& p : f.params) {
      mix(h, p.buffer ? 1 : 0);
      mix(h, p.buffer ? def_buffer(p.buffer) : def_var(p.var));
    }
    mix(h, stmt(f.body));
    return h;
  }

  size_t stmt(const Stmt& s) {
    if (!s) return 0x51ed;
    size_t h = size_t(s->kind) + 1;
    switch (s->kind) {
      case StmtKind::For: {
        auto& n = static_cast<const ForNode&>(*s);
        mix(h, size_t(n.for_kind));
        mix(h, expr(n.min));
        mix(h, expr(n.extent));
        mix(h, def_var(n.var));
        mix(h, stmt(n.body));
        return h;
      }
      case StmtKind::Allocate: {
        auto& n = static_cast<const AllocateNode&>(*s);
        mix(h, def_buffer(n.buffer));
        mix(h, stmt(n.body));
        return h;
      }
      case StmtKind::DeclBuffer: {
        auto& n = static_cast<const DeclBufferNode&>(*s);
        mix(h, expr(n.buffer->data));
        mix(h, def_buffer_fields(n.buffer));
        mix(h, stmt(n.body));
        return h;
      }
      case StmtKind::BufferStore: {
        auto& n = static_cast<const BufferStoreNode&>(*s);
        mix(h, use_buffer(n.buffer));
        mix(h, exprs(n.indices));
        mix(h, expr(n.value));
        return h;
      }
      case StmtKind::LetStmt: {
        auto& n = static_cast<const LetStmtNode&>(*s);
        mix(h, expr(n.value));
        mix(h, def_var(n.var));
        mix(h, stmt(n.body));
        return h;
      }
      case StmtKind::IfThenElse: {
        auto& n = static_cast<const IfThenElseNode&>(*s);
        mix(h, expr(n.cond));
        mix(h, stmt(n.then_case));
        mix(h, stmt(n.else_case));
        return h;
      }
      case StmtKind::Seq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) mix(h, stmt(c));
        return h;
      case StmtKind::Evaluate:
        mix(h, expr(static_cast<const EvaluateNode&>(*s).value));
        return h;
      case StmtKind::Return:
        mix(h, expr(static_cast<const ReturnNode&>(*s).value));
        return h;
    }
    return h;
  }

  size_t expr(const Expr& e) {
    if (!e) return 0xe3;
    size_t h = size_t(e->kind) + 101;
    mix(h, dtype(e->dtype));
    switch (e->kind) {
      case ExprKind::IntImm:
        mix(h, std::hash<int64_t>()(static_cast<const IntImmNode&>(*e).value));
        return h;
      case ExprKind::FloatImm: {
        double v = static_cast<const FloatImmNode&>(*e).value;
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        mix(h, std::hash<uint64_t>()(bits));
        return h;
      }
      case ExprKind::StringImm:
        mix(h, std::hash<std::string>()(static_cast<const StringImmNode&>(*e).value));
        return h;
      case ExprKind::Var: {
        auto it = vars_.find(e.get());
        mix(h, it != vars_.end() ? it->second : std::hash<const void*>()(e.get()));
        return h;
      }
      case ExprKind::Binary: {
        auto& n = static_cast<const BinaryNode&>(*e);
        mix(h, size_t(n.op));
        mix(h, expr(n.a));
        mix(h, expr(n.b));
        return h;
      }
      case ExprKind::Not:
        mix(h, expr(static_cast<const NotNode&>(*e).a));
        return h;
      case ExprKind::Cast:
        mix(h, expr(static_cast<const CastNode&>(*e).value));
        return h;
      case ExprKind::Select: {
        auto& n = static_cast<const SelectNode&>(*e);
        mix(h, expr(n.cond));
        mix(h, expr(n.true_value));
        mix(h, expr(n.false_value));
        return h;
      }
      case ExprKind::BufferLoad: {
        auto& n = static_cast<const BufferLoadNode&>(*e);
        mix(h, use_buffer(n.buffer));
        mix(h, exprs(n.indices));
        return h;
      }
      case ExprKind::Call: {
        auto& n = static_cast<const CallNode&>(*e);
        mix(h, size_t(n.call_kind));
        mix(h, std::hash<std::string>()(n.name));
        mix(h, exprs(n.args));
        return h;
      }
      case ExprKind::Ramp: {
        auto& n = static_cast<const RampNode&>(*e);
        mix(h, size_t(n.lanes));
        mix(h, expr(n.base));
        mix(h, expr(n.stride));
        return h;
      }
      case ExprKind::Broadcast: {
        auto& n = static_cast<const BroadcastNode&>(*e);
        mix(h, size_t(n.lanes));
        mix(h, expr(n.value));
        return h;
      }
    }
    return h;
  }

 private:
  static size_t dtype(DataType t) { return size_t(t.code) << 24 | size_t(t.bits) << 16 | t.lanes; }

  size_t exprs(const std::vector<Expr>& es) {
    size_t h = es.size();
    for (const Expr& e : es) mix(h, expr(e));
    return h;
  }

  // Definitions are numbered in the order they are met, as Equal pairs them.
  size_t def_var(const Var& v) {
    size_t id = vars_.size() + 1;
    vars_[v.get()] = id;
    size_t h = dtype(v->dtype);
    mix(h, id);
    return h;
  }

  size_t def_buffer_fields(const Buffer& b) {
    size_t h = dtype(b->dtype);
    mix(h, size_t(b->scope));
    mix(h, std::hash<int64_t>()(b->alignment));
    mix(h, exprs(b->shape));
    mix(h, exprs(b->strides));
    buffers_[b.get()] = buffers_.size() + 1;
    return h;
  }

  size_t def_buffer(const Buffer& b) {
    size_t h = def_var(b->data);
    mix(h, def_buffer_fields(b));
    return h;
  }

  size_t use_buffer(const Buffer& b) {
    auto it = buffers_.find(b.get());
    return it != buffers_.end() ? it->second : std::hash<const void*>()(b.get());
  }

  std::unordered_map<const void*, size_t> vars_;
  std::unordered_map<const void*, size_t> buffers_;
};

}  // namespace

bool structural_equal(const PrimFuncNode& a, const PrimFuncNode& b) { return Equal().func(a, b); }
size_t structural_hash(const PrimFuncNode& f) { return Hasher().func(f); }
bool structural_equal(const Stmt& a, const Stmt& b) { return Equal().stmt(a, b); }
bool structural_equal(const Expr& a, const Expr& b) { return Equal().expr(a, b); }

}  // namespace kiln::tir
