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
// The sums are reassociated (float results change by rounding, as in any
// vectorized or blocked reduction). Only float additions into buffers of
// the local scope qualify, each store adding a term that reads none of the
// loop's accumulators to the element it stores; an extent that the turns
// do not divide runs its last iterations after the loop.
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

// One accumulation: buffer[indices] = buffer[indices] + term.
struct Accumulation {
  const BufferStoreNode* store;
  Expr term;
};

// The store as an accumulation into a local float buffer, or nullopt.
std::optional<Accumulation> accumulation(const Stmt& s) {
  if (s->kind != StmtKind::BufferStore) return std::nullopt;
  const auto& st = static_cast<const BufferStoreNode&>(*s);
  if (st.buffer->scope != MemoryScope::Local || !st.value->dtype.is_float()) return std::nullopt;
  if (st.value->kind != ExprKind::Binary) return std::nullopt;
  const auto& b = static_cast<const BinaryNode&>(*st.value);
  if (b.op != BinaryOp::Add) return std::nullopt;
  auto is_self = [&](const Expr& e) {
    if (e->kind != ExprKind::BufferLoad) return false;
    const auto& l = static_cast<const BufferLoadNode&>(*e);
    return l.buffer == st.buffer && same_indices(l.indices, st.indices);
  };
  if (is_self(b.a)) return Accumulation{&st, b.b};
  if (is_self(b.b)) return Accumulation{&st, b.a};
  return std::nullopt;
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

class Interleaver : public Mutator {
 public:
  explicit Interleaver(const TirPassOptions& o) : options_(o) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    const auto& f = static_cast<const ForNode&>(*m);
    const auto extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Serial || !extent || *extent < 2 || defines_names(f.body)) return m;
    const auto acc = accumulations(f);
    if (!acc) return m;
    int64_t chains = 0;
    for (const Accumulation& a : *acc) chains += registers(a.store->value->dtype, options_.vector_bytes);
    if (chains >= kMultiplyAddsInFlight) return m;
    int64_t turns = 1;
    while (turns < kMaxTurns && turns * chains < kMultiplyAddsInFlight &&
           (turns + 1) * chains + kOperandRegisters <= options_.vector_registers)
      ++turns;
    turns = std::min(turns, *extent / kMinStepsPerTurn);
    if (turns < 2) return m;
    return interleave(f, *extent, *acc, turns);
  }

 private:
  // The loop body's stores as accumulations of distinct loop-invariant
  // elements whose terms read none of them, or nullopt.
  static std::optional<std::vector<Accumulation>> accumulations(const ForNode& f) {
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

  Stmt interleave(const ForNode& f, int64_t extent, const std::vector<Accumulation>& acc, int64_t turns) {
    std::map<const BufferNode*, Buffer> buffers;
    for (const Accumulation& a : acc) buffers[a.store->buffer.get()] = a.store->buffer;
    // One copy of each accumulated buffer per turn after the first.
    std::vector<std::map<const BufferNode*, Buffer>> copies(static_cast<size_t>(turns));
    std::vector<Buffer> locals;
    for (int64_t t = 1; t < turns; ++t)
      for (const auto& [node, buffer] : buffers) {
        int& count = names_[buffer->name];
        const std::string name = buffer->name + "_turn" + std::to_string(++count);
        Buffer copy = make_buffer(name, buffer->dtype, buffer->shape, MemoryScope::Local, buffer->alignment);
        copies[size_t(t)][node] = copy;
        locals.push_back(copy);
      }
    auto turn_body = [&](int64_t t, const Expr& index) {
      std::unordered_map<const VarNode*, Expr> at{{f.var.get(), index}};
      Stmt b = simplify_stmt(substitute(f.body, at));
      return t == 0 ? b : Redirect(copies[size_t(t)]).mutate(b);
    };
    const DataType index_type = f.var->dtype;
    std::vector<Stmt> stmts, steps;
    for (int64_t t = 1; t < turns; ++t)
      for (const Accumulation& a : acc) {
        const DataType d = a.store->value->dtype;
        Expr zero = float_imm(0.0, d.element());
        if (d.lanes > 1) zero = broadcast(zero, d.lanes);
        stmts.push_back(store(copies[size_t(t)][a.store->buffer.get()], a.store->indices, zero));
      }
    const Expr step_base = mul(Expr(f.var), int_imm(turns, index_type));
    for (int64_t t = 0; t < turns; ++t)
      steps.push_back(turn_body(t, add(add(f.min, step_base), int_imm(t, index_type))));
    stmts.push_back(for_loop(f.var, int_imm(0, index_type), int_imm(extent / turns, index_type),
                             ForKind::Serial, seq(std::move(steps))));
    // Iterations the turns leave over.
    for (int64_t k = extent / turns * turns; k < extent; ++k)
      stmts.push_back(turn_body(0, add(f.min, int_imm(k, index_type))));
    for (const Accumulation& a : acc) {
      const Buffer& b = a.store->buffer;
      // Summed in pairs: a tree of adds, not one chain of them.
      std::vector<Expr> sums{load(b, a.store->indices)};
      for (int64_t t = 1; t < turns; ++t) sums.push_back(load(copies[size_t(t)][b.get()], a.store->indices));
      while (sums.size() > 1) {
        std::vector<Expr> pairs;
        for (size_t k = 0; k + 1 < sums.size(); k += 2) pairs.push_back(add(sums[k], sums[k + 1]));
        if (sums.size() % 2) pairs.push_back(sums.back());
        sums = std::move(pairs);
      }
      stmts.push_back(store(b, a.store->indices, sums[0]));
    }
    Stmt out = seq(std::move(stmts));
    for (size_t k = locals.size(); k-- > 0;) out = allocate(locals[k], out);
    return out;
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
