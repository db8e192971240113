// interleave-accumulators: a serial loop that only adds into a few local
// accumulators (a register tile of fewer vectors than the multiply-adds a
// CPU keeps in flight, what promote-accumulators leaves around a tile's
// innermost reduction loop) runs its iterations in turns over as many
// copies of them as the registers hold, summed once after the loop. Each
// accumulator's chain of dependent adds is then that many times shorter:
// a tile of 7 vectors (AVX2's 3x3 conv on 7 output columns) issued one
// multiply-add per accumulator every 4 cycles, two units' worth of
// latency, and waited on its own results an eighth of the time.
//
//   for %k from 0 extent 8 {
//     %c_acc[ramp(0, 1, 8)] = %c_acc[ramp(0, 1, 8)] + broadcast(%a[%k], 8) * %b[ramp(%k * 8, 1, 8)]
//   }
// becomes, with two turns,
//   allocate %c_acc_turn1: Buffer[(8), float32, scope="local"] {
//     %c_acc_turn1[ramp(0, 1, 8)] = broadcast(0.0, 8)
//     for %k from 0 extent 4 {
//       %c_acc[ramp(0, 1, 8)] = %c_acc[ramp(0, 1, 8)] + broadcast(%a[%k * 2], 8) * ...
//       %c_acc_turn1[ramp(0, 1, 8)] = %c_acc_turn1[ramp(0, 1, 8)] + broadcast(%a[%k * 2 + 1], 8) * ...
//     }
//     %c_acc[ramp(0, 1, 8)] = %c_acc[ramp(0, 1, 8)] + %c_acc_turn1[ramp(0, 1, 8)]
//   }
//
// When the loop is what promote-accumulators leaves inside a tile's other
// reduction loops (a local copy of the tile loaded before it and stored
// after it), the turns' copies live across that whole nest instead, zeroed
// before it and summed into the tile after it (see hoisted()).
//
// Maxima run in turns the same way (te::max, and te::nan_max, whose chain
// of a compare, a NaN test and a blend per step made a max over 64 x 56 x 56
// wait on latency: 3x slower than its loads), each copy starting from the
// type's least value.
//
// The sums are reassociated (float results change by rounding, as in any
// vectorized or blocked reduction; a maximum is the same in any order, NaN
// kept). Only float additions and maxima into buffers of the local scope
// qualify, each store combining its element with a term that reads none of
// the loop's accumulators; an extent that the turns do not divide runs its
// last iterations after the loop.
#include <limits>
#include <map>
#include <set>

#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// Multiply-adds in flight that keep a CPU's units busy: two units of four
// cycles' latency (AVX2 and AVX-512 x86 cores).
constexpr int64_t kMultiplyAddsInFlight = 8;
// Registers a tile's step needs beside its accumulators: an input
// broadcast and a weight vector.
constexpr int64_t kOperandRegisters = 2;
// The most turns: a lone scalar or vector sum gets this many chains.
constexpr int64_t kMaxTurns = 8;
// Iterations each turn takes at least: over fewer, the copies' setup and
// final sums cost about what the shorter chains save (a mean over 7
// columns in float64 ran 15-20% slower in 4 turns).
constexpr int64_t kMinStepsPerTurn = 4;

class ReadsAny : public Visitor {
 public:
  explicit ReadsAny(const std::set<const BufferNode*>& buffers) : buffers_(buffers) {}
  bool found = false;

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    found |= buffers_.count(n.buffer.get()) > 0;
    Visitor::visit_BufferLoad(n);
  }

 private:
  const std::set<const BufferNode*>& buffers_;
};

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!structural_equal(a[k], b[k])) return false;
  return true;
}

// How an accumulation combines its element with a term: a float sum, a
// maximum (te::max: max(acc, t), of floats or integers) or a NaN-keeping
// maximum (te::nan_max: select(ne(t, t), t, max(t, acc))).
enum class Combine { Add, Max, NanMax };

// One accumulation: buffer[indices] = combine(buffer[indices], term).
struct Accumulation {
  const BufferStoreNode* store;
  Expr term;
  Combine combine;
};

const BinaryNode* as_binary(const Expr& e, BinaryOp op) {
  if (e->kind != ExprKind::Binary) return nullptr;
  const auto& b = static_cast<const BinaryNode&>(*e);
  return b.op == op ? &b : nullptr;
}

// The store as an accumulation into a local buffer (sums of floats only:
// integer sums are left to LLVM), or nullopt.
std::optional<Accumulation> accumulation(const Stmt& s) {
  if (s->kind != StmtKind::BufferStore) return std::nullopt;
  const auto& st = static_cast<const BufferStoreNode&>(*s);
  if (st.buffer->scope != MemoryScope::Local) return std::nullopt;
  auto is_self = [&](const Expr& e) {
    if (e->kind != ExprKind::BufferLoad) return false;
    const auto& l = static_cast<const BufferLoadNode&>(*e);
    return l.buffer == st.buffer && same_indices(l.indices, st.indices);
  };
  // The other operand of `b` when one is the element itself.
  auto other = [&](const BinaryNode* b) -> Expr {
    if (!b) return nullptr;
    if (is_self(b->a) && !is_self(b->b)) return b->b;
    if (is_self(b->b) && !is_self(b->a)) return b->a;
    return nullptr;
  };
  if (Expr t = other(as_binary(st.value, BinaryOp::Add)); t && st.value->dtype.is_float())
    return Accumulation{&st, t, Combine::Add};
  if (Expr t = other(as_binary(st.value, BinaryOp::Max))) return Accumulation{&st, t, Combine::Max};
  if (st.value->kind == ExprKind::Select && st.value->dtype.is_float()) {
    const auto& sel = static_cast<const SelectNode&>(*st.value);
    const BinaryNode* nan = as_binary(sel.cond, BinaryOp::NE);
    Expr t = other(as_binary(sel.false_value, BinaryOp::Max));
    if (nan && t && structural_equal(nan->a, t) && structural_equal(nan->b, t) &&
        structural_equal(sel.true_value, t))
      return Accumulation{&st, t, Combine::NanMax};
  }
  return std::nullopt;
}

// `a` and `b` combined as accumulation `how` combines an element with a term.
Expr combined(Combine how, const Expr& a, const Expr& b) {
  switch (how) {
    case Combine::Add:
      return add(a, b);
    case Combine::Max:
      return max(a, b);
    case Combine::NanMax:
      return select(binary(BinaryOp::NE, b, b), b, max(b, a));
  }
  return nullptr;
}

// What an element starts from for `how`: 0, or the least value of `d`'s
// type (-inf for floats).
Expr identity(Combine how, DataType d) {
  const DataType e = d.element();
  Expr v;
  if (how == Combine::Add)
    v = float_imm(0.0, e);
  else if (e.is_float())
    v = float_imm(-std::numeric_limits<double>::infinity(), e);
  else if (e.is_int())
    v = int_imm(e.bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (e.bits - 1)), e);
  else
    v = int_imm(0, e);
  return d.lanes > 1 ? broadcast(v, d.lanes) : v;
}

// Registers an access of `dtype` takes (a vector wider than the target's
// in several).
int64_t registers(DataType dtype, int64_t vector_bytes) {
  return std::max<int64_t>(1, (dtype.bytes() + vector_bytes - 1) / vector_bytes);
}

// Redirects the accumulations' stores and self-loads to another buffer.
class Redirect : public Mutator {
 public:
  explicit Redirect(std::map<const BufferNode*, Buffer> to) : to_(std::move(to)) {}

 protected:
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    auto it = to_.find(n.buffer.get());
    if (it == to_.end()) return Mutator::mutate_BufferLoad(e, n);
    return load(it->second, n.indices);
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) override {
    auto it = to_.find(n.buffer.get());
    if (it == to_.end()) return Mutator::mutate_BufferStore(s, n);
    return store(it->second, n.indices, mutate(n.value));
  }

 private:
  std::map<const BufferNode*, Buffer> to_;
};

// The copies of the accumulated buffers, one set per turn after the first
// (copies[t][buffer]), and every copy for the allocations.
struct Turns {
  int64_t count = 1;
  std::vector<std::map<const BufferNode*, Buffer>> copies;
  std::vector<Buffer> locals;
};

class Interleaver : public Mutator {
 public:
  explicit Interleaver(const TirPassOptions& o) : options_(o) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    if (Stmt nest = hoisted(n); nest) return nest;
    Stmt m = Mutator::mutate_For(s, n);
    const auto& f = static_cast<const ForNode&>(*m);
    const auto acc = accumulations(f);
    const int64_t count = acc ? turns_for(f, *acc) : 1;
    if (count < 2) return m;
    Turns t = make_turns(*acc, count);
    std::vector<Stmt> stmts = zero_copies(*acc, t);
    stmts.push_back(interleaved(f, t));
    // The copies summed into the accumulators.
    for (const Accumulation& a : *acc) {
      const Buffer& b = a.store->buffer;
      stmts.push_back(store(b, a.store->indices, sum_of(load(b, a.store->indices), a, t)));
    }
    return allocated(t, seq(std::move(stmts)));
  }

 private:
  // The turns a loop of `acc` runs in: as many as reach
  // kMultiplyAddsInFlight chains and the registers hold; 1 for none.
  int64_t turns_for(const ForNode& f, const std::vector<Accumulation>& acc) const {
    const auto extent = as_const_int(f.extent);
    if (!extent) return 1;
    int64_t chains = 0;
    for (const Accumulation& a : acc) chains += registers(a.store->value->dtype, options_.vector_bytes);
    if (chains >= kMultiplyAddsInFlight) return 1;
    int64_t turns = 1;
    while (turns < kMaxTurns && turns * chains < kMultiplyAddsInFlight &&
           (turns + 1) * chains + kOperandRegisters <= options_.vector_registers)
      ++turns;
    return std::min(turns, *extent / kMinStepsPerTurn);
  }

  // The loop body's stores as accumulations of distinct loop-invariant
  // elements whose terms read none of them, or nullopt.
  static std::optional<std::vector<Accumulation>> accumulations(const ForNode& f) {
    const auto extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Serial || !extent || *extent < 2 || defines_names(f.body)) return std::nullopt;
    std::vector<Stmt> body{f.body};
    if (f.body->kind == StmtKind::Seq) body = static_cast<const SeqNode&>(*f.body).stmts;
    std::vector<Accumulation> acc;
    std::set<const BufferNode*> accumulated;
    for (const Stmt& st : body) {
      auto a = accumulation(st);
      if (!a) return std::nullopt;
      for (const Expr& i : a->store->indices)
        if (uses_var(i, f.var)) return std::nullopt;  // not one element across the loop
      // Two adds into one element are one chain already.
      for (const Accumulation& b : acc)
        if (b.store->buffer == a->store->buffer && same_indices(b.store->indices, a->store->indices))
          return std::nullopt;
      acc.push_back(*a);
      accumulated.insert(a->store->buffer.get());
    }
    for (const Accumulation& a : acc) {
      ReadsAny r(accumulated);
      r.visit(a.term);
      for (const Expr& i : a.store->indices) r.visit(i);
      if (r.found) return std::nullopt;
    }
    return acc;
  }

  Turns make_turns(const std::vector<Accumulation>& acc, int64_t count) {
    Turns t;
    t.count = count;
    t.copies.resize(size_t(count));
    for (int64_t k = 1; k < count; ++k)
      for (const Accumulation& a : acc) {
        const Buffer& buffer = a.store->buffer;
        if (t.copies[size_t(k)].count(buffer.get())) continue;
        int& n = names_[buffer->name];
        Buffer copy = make_buffer(buffer->name + "_turn" + std::to_string(++n), buffer->dtype, buffer->shape,
                                  MemoryScope::Local, buffer->alignment);
        t.copies[size_t(k)][buffer.get()] = copy;
        t.locals.push_back(copy);
      }
    return t;
  }

  static std::vector<Stmt> zero_copies(const std::vector<Accumulation>& acc, const Turns& t) {
    std::vector<Stmt> stmts;
    for (int64_t k = 1; k < t.count; ++k)
      for (const Accumulation& a : acc)
        stmts.push_back(store(t.copies[size_t(k)].at(a.store->buffer.get()), a.store->indices,
                              identity(a.combine, a.store->value->dtype)));
    return stmts;
  }

  // `first` and the copies of `a`'s element combined in pairs: a tree of
  // adds (or maxima), not one chain of them.
  static Expr sum_of(Expr first, const Accumulation& a, const Turns& t) {
    std::vector<Expr> sums{std::move(first)};
    for (int64_t k = 1; k < t.count; ++k)
      sums.push_back(load(t.copies[size_t(k)].at(a.store->buffer.get()), a.store->indices));
    // A NaN-keeping step repeats its term three times: a chain of them,
    // each taking one copy, keeps the expression linear (once per loop, its
    // latency does not matter).
    if (a.combine == Combine::NanMax) {
      Expr e = sums[0];
      for (size_t k = 1; k < sums.size(); ++k) e = combined(a.combine, e, sums[k]);
      return e;
    }
    while (sums.size() > 1) {
      std::vector<Expr> pairs;
      for (size_t k = 0; k + 1 < sums.size(); k += 2)
        pairs.push_back(combined(a.combine, sums[k], sums[k + 1]));
      if (sums.size() % 2) pairs.push_back(sums.back());
      sums = std::move(pairs);
    }
    return sums[0];
  }

  static Stmt allocated(const Turns& t, Stmt body) {
    for (size_t k = t.locals.size(); k-- > 0;) body = allocate(t.locals[k], body);
    return body;
  }

  // The loop in turns (each iteration runs `t.count` of the old ones, turn k
  // adding into copy k), then the iterations the turns leave over.
  static Stmt interleaved(const ForNode& f, const Turns& t) {
    const int64_t extent = *as_const_int(f.extent);
    const DataType index_type = f.var->dtype;
    auto turn_body = [&](int64_t k, const Expr& index) {
      std::unordered_map<const VarNode*, Expr> at{{f.var.get(), index}};
      Stmt b = simplify_stmt(substitute(f.body, at));
      return k == 0 ? b : Redirect(t.copies[size_t(k)]).mutate(b);
    };
    std::vector<Stmt> stmts, steps;
    const Expr step_base = mul(Expr(f.var), int_imm(t.count, index_type));
    for (int64_t k = 0; k < t.count; ++k)
      steps.push_back(turn_body(k, add(add(f.min, step_base), int_imm(k, index_type))));
    stmts.push_back(for_loop(f.var, int_imm(0, index_type), int_imm(extent / t.count, index_type),
                             ForKind::Serial, seq(std::move(steps))));
    for (int64_t k = extent / t.count * t.count; k < extent; ++k)
      stmts.push_back(turn_body(0, add(f.min, int_imm(k, index_type))));
    return seq(std::move(stmts));
  }

  // What promote-accumulators leaves around a register tile's innermost
  // reduction loop, inside the tile's other reduction loops (a perfect nest
  // of serial loops from `outer`):
  //
  //   for %rb { for %ry { for %rx {
  //     allocate %acc { %acc[i] = %c[j] ...; for %ri { %acc[i] = %acc[i] + ... }; %c[j] = %acc[i] ... }
  //   } } }
  //
  // When %ri runs in turns, the copies live across the whole nest: zeroed
  // before it and summed into %c after it, once per tile rather than once
  // per pass of %ri (with 2 turns of 4 steps, 1 add per 8 multiply-adds).
  // Null when `outer` is not such a nest.
  Stmt hoisted(const ForNode& outer) {
    std::vector<const ForNode*> nest{&outer};
    while (nest.back()->for_kind == ForKind::Serial && nest.back()->body->kind == StmtKind::For)
      nest.push_back(static_cast<const ForNode*>(nest.back()->body.get()));
    if (nest.back()->for_kind != ForKind::Serial || nest.back()->body->kind != StmtKind::Allocate)
      return nullptr;
    const auto& alloc = static_cast<const AllocateNode&>(*nest.back()->body);
    if (alloc.body->kind != StmtKind::Seq) return nullptr;
    const std::vector<Stmt>& stmts = static_cast<const SeqNode&>(*alloc.body).stmts;
    // The loads into the local buffer, the loop, the stores back.
    size_t loop_at = 0;
    while (loop_at < stmts.size() && stmts[loop_at]->kind == StmtKind::BufferStore) ++loop_at;
    if (loop_at == 0 || loop_at >= stmts.size() || stmts[loop_at]->kind != StmtKind::For ||
        stmts.size() != 2 * loop_at + 1)
      return nullptr;
    const auto& inner = static_cast<const ForNode&>(*stmts[loop_at]);
    const auto acc = accumulations(inner);
    const auto copies = acc ? copied_back(stmts, loop_at, alloc.buffer, nest) : std::nullopt;
    if (!copies) return nullptr;
    // The tile's element each accumulation's local element is stored back to.
    std::vector<const BufferStoreNode*> target;
    std::set<const BufferNode*> outside;
    for (const Accumulation& a : *acc) {
      const BufferStoreNode* found = nullptr;
      for (const auto& [local_indices, back] : *copies)
        if (a.store->buffer == alloc.buffer && same_indices(a.store->indices, *local_indices)) found = back;
      if (!found) return nullptr;
      target.push_back(found);
      outside.insert(found->buffer.get());
    }
    // The loop reads none of those elements (their sum is complete only
    // after the nest).
    ReadsAny reads(outside);
    reads.visit(inner.body);
    const int64_t count = reads.found ? 1 : turns_for(inner, *acc);
    if (count < 2) return nullptr;
    Turns t = make_turns(*acc, count);
    std::vector<Stmt> body(stmts.begin(), stmts.end());
    body[loop_at] = interleaved(inner, t);
    Stmt nested = allocate(alloc.buffer, seq(std::move(body)));
    for (size_t k = nest.size(); k-- > 0;)
      nested = for_loop(nest[k]->var, nest[k]->min, nest[k]->extent, nest[k]->for_kind, nested);
    std::vector<Stmt> out = zero_copies(*acc, t);
    out.push_back(nested);
    for (size_t k = 0; k < acc->size(); ++k) {
      const BufferStoreNode& c = *target[k];
      out.push_back(store(c.buffer, c.indices, sum_of(load(c.buffer, c.indices), (*acc)[k], t)));
    }
    return allocated(t, seq(std::move(out)));
  }

  // The copies around the loop at `loop_at` in `stmts`: statement k loads
  // `local`[i] from a tile element, statement loop_at + 1 + k stores it
  // back there, at an index the nest's loops leave unchanged. Per copy, i
  // and the store back; nullopt when the statements are not such copies.
  using CopyBack = std::pair<const std::vector<Expr>*, const BufferStoreNode*>;
  static std::optional<std::vector<CopyBack>> copied_back(const std::vector<Stmt>& stmts, size_t loop_at,
                                                          const Buffer& local,
                                                          const std::vector<const ForNode*>& nest) {
    std::vector<CopyBack> copies;
    for (size_t k = 0; k < loop_at; ++k) {
      if (stmts[loop_at + 1 + k]->kind != StmtKind::BufferStore) return std::nullopt;
      const auto& in = static_cast<const BufferStoreNode&>(*stmts[k]);
      const auto& out = static_cast<const BufferStoreNode&>(*stmts[loop_at + 1 + k]);
      if (in.buffer != local || in.value->kind != ExprKind::BufferLoad ||
          out.value->kind != ExprKind::BufferLoad)
        return std::nullopt;
      const auto& from = static_cast<const BufferLoadNode&>(*in.value);
      const auto& to = static_cast<const BufferLoadNode&>(*out.value);
      if (out.buffer != from.buffer || !same_indices(out.indices, from.indices) || to.buffer != local ||
          !same_indices(to.indices, in.indices))
        return std::nullopt;
      for (const Expr& i : out.indices)
        for (const ForNode* l : nest)
          if (uses_var(i, l->var)) return std::nullopt;  // not one element across the nest
      copies.push_back({&in.indices, &out});
    }
    return copies;
  }

  const TirPassOptions& options_;
  std::map<std::string, int> names_;
};

}  // namespace

PrimFunc interleave_accumulators(const PrimFunc& f, const TirPassOptions& options) {
  if (options.vector_registers <= 0 || options.vector_bytes <= 0) return f;
  return Interleaver(options).mutate_function(f);
}

}  // namespace kiln::tir
