// promote-accumulators: a serial loop whose body updates memory at indices
// that do not change across its iterations (the register tile of a product
// accumulated straight into its output, with the reduction split around the
// tile so that a block of the right operand stays in cache) keeps those
// elements in a local buffer for the whole loop: loaded once before it,
// stored once after it. LLVM then holds them in registers; left in memory,
// every multiply-add would load and store its accumulator.
//
//   for %k from 0 extent 256 {
//     %C[ramp(%r, 1, 16)] = %C[ramp(%r, 1, 16)] + broadcast(%A[%k], 16) * %B[ramp(%k * 16, 1, 16)]
//   }
// becomes
//   allocate %C_acc: Buffer[(16), float32, scope="local"] {
//     %C_acc[ramp(0, 1, 16)] = %C[ramp(%r, 1, 16)]
//     for %k from 0 extent 256 {
//       %C_acc[ramp(0, 1, 16)] = %C_acc[ramp(0, 1, 16)] + broadcast(%A[%k], 16) * %B[ramp(%k * 16, 1, 16)]
//     }
//     %C[ramp(%r, 1, 16)] = %C_acc[ramp(0, 1, 16)]
//   }
//
// Only loops whose body is a sequence of stores (what unroll-loops leaves of
// a tile's rows) are considered, and a buffer is promoted only when every
// access to it in the loop is at an invariant index, the accesses fall into
// groups of equal indices, and the groups provably do not overlap (constant
// differences of at least the width of an access). Distinct buffers never
// alias in kiln's tensor IR.
#include <algorithm>
#include <map>

#include "tir/mutator.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// One access: the first index of a (flattened) load or store and its lanes.
struct Access {
  Expr base;
  int lanes = 1;
};

bool index_of(const std::vector<Expr>& indices, Access* a) {
  if (indices.size() != 1) return false;
  const Expr& i = indices[0];
  if (i->kind == ExprKind::Ramp) {
    const auto& r = static_cast<const RampNode&>(*i);
    if (!is_const_int(r.stride, 1)) return false;
    *a = {r.base, r.lanes};
    return true;
  }
  if (i->dtype.lanes != 1) return false;
  *a = {i, 1};
  return true;
}

// Every load and store in a loop body, per buffer; `ok` is false when an
// access cannot be described (a gather, a multi-dimensional index).
class Collect : public Visitor {
 public:
  std::map<const BufferNode*, std::vector<Access>> accesses;
  std::map<const BufferNode*, Buffer> buffers;
  std::map<const BufferNode*, bool> stored, ok;

  void note(const Buffer& b, const std::vector<Expr>& indices) {
    Access a;
    buffers[b.get()] = b;
    if (!ok.count(b.get())) ok[b.get()] = true;
    if (!index_of(indices, &a))
      ok[b.get()] = false;
    else
      accesses[b.get()].push_back(a);
  }

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    note(n.buffer, n.indices);
    Visitor::visit_BufferLoad(n);
  }
  void visit_BufferStore(const BufferStoreNode& n) override {
    note(n.buffer, n.indices);
    stored[n.buffer.get()] = true;
    Visitor::visit_BufferStore(n);
  }
};

// An index as a sum of terms times constants plus a constant: variables,
// and other subexpressions (a division, a load) as opaque terms named by
// their text, so that equal ones cancel.
struct Linear {
  std::map<std::string, int64_t> terms;
  int64_t constant = 0;
};

void add_linear(const Expr& e, int64_t scale, Linear& out) {
  if (auto v = as_const_int(e)) {
    out.constant += scale * *v;
    return;
  }
  if (e->kind == ExprKind::Var) {
    out.terms["%" + std::to_string(reinterpret_cast<uintptr_t>(e.get()))] += scale;
    return;
  }
  if (e->kind == ExprKind::Binary) {
    const auto& b = static_cast<const BinaryNode&>(*e);
    if (b.op == BinaryOp::Add || b.op == BinaryOp::Sub) {
      add_linear(b.a, scale, out);
      add_linear(b.b, b.op == BinaryOp::Add ? scale : -scale, out);
      return;
    }
    if (b.op == BinaryOp::Mul) {
      if (auto c = as_const_int(b.b)) return add_linear(b.a, scale * *c, out);
      if (auto c = as_const_int(b.a)) return add_linear(b.b, scale * *c, out);
    }
  }
  out.terms[print_expr(e)] += scale;
}

// a - b when it is a constant.
std::optional<int64_t> difference(const Expr& a, const Expr& b) {
  Linear d;
  add_linear(a, 1, d);
  add_linear(b, -1, d);
  for (const auto& [term, coefficient] : d.terms)
    if (coefficient != 0) return std::nullopt;
  return d.constant;
}

// The distinct accesses of a buffer when it can be promoted.
std::optional<std::vector<Access>> groups_of(const std::vector<Access>& all, const Var& loop) {
  std::vector<Access> groups;
  for (const Access& a : all) {
    if (uses_var(a.base, loop)) return std::nullopt;
    bool found = false;
    for (const Access& g : groups) {
      auto d = difference(a.base, g.base);
      if (!d) return std::nullopt;
      if (*d == 0 && g.lanes == a.lanes) {
        found = true;
        break;
      }
      if (*d > -int64_t(a.lanes) && *d < int64_t(g.lanes)) return std::nullopt;  // overlap
    }
    if (!found) groups.push_back(a);
  }
  return groups;
}

// Replaces accesses of one buffer at the groups' indices by the local copy.
class Redirect : public Mutator {
 public:
  Redirect(const Buffer& from, const Buffer& to, const std::vector<Access>& groups,
           std::vector<int64_t> offsets)
      : from_(from), to_(to), groups_(groups), offsets_(std::move(offsets)) {}

  Expr local_index(size_t g) const {
    const Access& a = groups_[g];
    Expr at = int_imm(offsets_[g], a.base->dtype);
    return a.lanes == 1 ? at : ramp(at, int_imm(1, a.base->dtype), a.lanes);
  }

 protected:
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    if (n.buffer != from_) return Mutator::mutate_BufferLoad(e, n);
    return load(to_, {local_index(find(n.indices))});
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) override {
    if (n.buffer != from_) return Mutator::mutate_BufferStore(s, n);
    return store(to_, {local_index(find(n.indices))}, mutate(n.value));
  }

 private:
  size_t find(const std::vector<Expr>& indices) const {
    Access a;
    index_of(indices, &a);
    for (size_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].lanes == a.lanes && difference(a.base, groups_[g].base) == int64_t(0)) return g;
    throw Error("promote-accumulators: an access of " + from_->name + " is in no group");
  }

  Buffer from_, to_;
  const std::vector<Access>& groups_;
  std::vector<int64_t> offsets_;
};

bool only_stores(const Stmt& body) {
  if (body->kind == StmtKind::BufferStore) return true;
  if (body->kind != StmtKind::Seq) return false;
  for (const Stmt& s : static_cast<const SeqNode&>(*body).stmts)
    if (s->kind != StmtKind::BufferStore) return false;
  return true;
}

bool store_uses(const Stmt& s, const Var& v) {
  const auto& st = static_cast<const BufferStoreNode&>(*s);
  for (const Expr& i : st.indices)
    if (uses_var(i, v)) return true;
  return uses_var(st.value, v);
}

// A loop whose body is an inner loop promoted here (allocate locals {
// copies in; the loop; copies out }) with copies that do not depend on
// it: the copies move outside it, so the accumulators stay in registers
// across both loops (a 3-D conv's taps rz and ry around rx, whose 3 steps
// each loaded and stored every accumulator). Null when the body is not so.
Stmt lift_promoted(const ForNode& f) {
  std::vector<Buffer> locals;
  Stmt b = f.body;
  while (b->kind == StmtKind::Allocate) {
    const auto& a = static_cast<const AllocateNode&>(*b);
    if (a.buffer->scope != MemoryScope::Local) return nullptr;
    locals.push_back(a.buffer);
    b = a.body;
  }
  if (locals.empty() || b->kind != StmtKind::Seq) return nullptr;
  const std::vector<Stmt>& stmts = static_cast<const SeqNode&>(*b).stmts;
  size_t inner = stmts.size();
  for (size_t k = 0; k < stmts.size(); ++k) {
    if (stmts[k]->kind == StmtKind::For && inner == stmts.size()) {
      inner = k;
      continue;
    }
    if (stmts[k]->kind != StmtKind::BufferStore || store_uses(stmts[k], f.var)) return nullptr;
  }
  if (inner == stmts.size()) return nullptr;
  // The copies in write the locals; the copies out write the buffers they
  // came from, which the inner loop (redirected) no longer touches.
  Collect in_loop;
  in_loop.visit(stmts[inner]);
  for (size_t k = 0; k < stmts.size(); ++k) {
    if (k == inner) continue;
    const Buffer& to = static_cast<const BufferStoreNode&>(*stmts[k]).buffer;
    const bool local = std::find(locals.begin(), locals.end(), to) != locals.end();
    if (local != (k < inner) || (!local && in_loop.buffers.count(to.get()))) return nullptr;
  }
  std::vector<Stmt> lifted(stmts.begin(), stmts.begin() + std::ptrdiff_t(inner));
  lifted.push_back(for_loop(f.var, f.min, f.extent, f.for_kind, stmts[inner]));
  lifted.insert(lifted.end(), stmts.begin() + std::ptrdiff_t(inner) + 1, stmts.end());
  Stmt body = seq(std::move(lifted));
  for (size_t k = locals.size(); k-- > 0;) body = allocate(locals[k], body);
  return body;
}

class Promoter : public Mutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    const auto& f = static_cast<const ForNode&>(*m);
    auto extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Serial || !extent || *extent < 2) return m;
    if (!only_stores(f.body)) {
      Stmt lifted = lift_promoted(f);
      return lifted ? lifted : m;
    }
    Collect c;
    c.visit(f.body);
    Stmt loop = m;
    std::vector<Stmt> before, after;
    std::vector<Buffer> locals;
    for (const auto& [node, buffer] : c.buffers) {
      if (!c.stored.count(node) || !c.ok[node] || buffer->scope == MemoryScope::Local) continue;
      auto groups = groups_of(c.accesses[node], f.var);
      if (!groups) continue;
      std::vector<int64_t> offsets;
      int64_t size = 0;
      for (const Access& g : *groups) {
        offsets.push_back(size);
        size += g.lanes;
      }
      // Buffer names are unique in a function: the first copy is NAME_acc, later ones NAME_acc1, ...
      int& copies = copies_[buffer->name];
      std::string name = buffer->name + "_acc" + (copies ? std::to_string(copies) : "");
      ++copies;
      Buffer local = make_buffer(name, buffer->dtype, {int_imm(size)}, MemoryScope::Local);
      Redirect r(buffer, local, *groups, offsets);
      const auto& lf = static_cast<const ForNode&>(*loop);
      loop = for_loop(lf.var, lf.min, lf.extent, lf.for_kind, r.mutate(lf.body));
      for (size_t g = 0; g < groups->size(); ++g) {
        const Access& a = (*groups)[g];
        Expr at = a.lanes == 1 ? a.base : ramp(a.base, int_imm(1, a.base->dtype), a.lanes);
        before.push_back(store(local, {r.local_index(g)}, load(buffer, {at})));
        after.push_back(store(buffer, {at}, load(local, {r.local_index(g)})));
      }
      locals.push_back(local);
    }
    if (locals.empty()) return m;
    std::vector<Stmt> stmts = std::move(before);
    stmts.push_back(loop);
    stmts.insert(stmts.end(), after.begin(), after.end());
    Stmt body = seq(std::move(stmts));
    for (size_t k = locals.size(); k-- > 0;) body = allocate(locals[k], body);
    return body;
  }

 private:
  std::map<std::string, int> copies_;
};

}  // namespace

PrimFunc promote_accumulators(const PrimFunc& f) { return Promoter().mutate_function(f); }

}  // namespace kiln::tir
