// share-common-subexpressions: an expression that a statement computes more
// than once is computed once, in a let before the statement, and the
// statement reads the variable.
//
// Inlining an epilogue repeats its input in every use: hard_swish reads x
// three times, its clip compares and selects on x / 6 + 0.5 several times
// over, and a chain of such ops multiplies the copies. The copies are equal
// trees, not one shared node, so LLVM gets each as separate instructions and
// spends most of a model's compile time merging them again.
//
//   %y[ramp(%o, 1, 16)] = select(%x[ramp(%o, 1, 16)] + %b[ramp(%o, 1, 16)] > broadcast(0.0, 16),
//                                %x[ramp(%o, 1, 16)] + %b[ramp(%o, 1, 16)], broadcast(0.0, 16))
// becomes
//   let %cse0 = %x[ramp(%o, 1, 16)] + %b[ramp(%o, 1, 16)]
//   %y[ramp(%o, 1, 16)] = select(%cse0 > broadcast(0.0, 16), %cse0, broadcast(0.0, 16))
//
// Every part of a statement's expressions is evaluated before the statement
// takes effect (select evaluates both values; loads in it read clamped
// indices), so computing a repeated part first changes nothing but the
// count. Calls to C functions and parallel_status are never shared, nor are
// the parts holding them. Leaves, ramps and broadcasts stay in place (codegen
// reads a load at a ramp as a contiguous vector load); their scalar parts
// are shared.
// Children statements are handled on their own; nothing is shared across
// statements (a store in between may change what a load reads).
#include <cstring>
#include <map>

#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

bool is_leaf(const Expr& e) {
  return e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm || e->kind == ExprKind::StringImm ||
         e->kind == ExprKind::Var;
}

// The operands of `e`, in order.
std::vector<Expr> children(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Binary: {
      auto& n = static_cast<const BinaryNode&>(*e);
      return {n.a, n.b};
    }
    case ExprKind::Not:
      return {static_cast<const NotNode&>(*e).a};
    case ExprKind::Cast:
      return {static_cast<const CastNode&>(*e).value};
    case ExprKind::Select: {
      auto& n = static_cast<const SelectNode&>(*e);
      return {n.cond, n.true_value, n.false_value};
    }
    case ExprKind::BufferLoad:
      return static_cast<const BufferLoadNode&>(*e).indices;
    case ExprKind::Call:
      return static_cast<const CallNode&>(*e).args;
    case ExprKind::Ramp: {
      auto& n = static_cast<const RampNode&>(*e);
      return {n.base, n.stride};
    }
    case ExprKind::Broadcast:
      return {static_cast<const BroadcastNode&>(*e).value};
    default:
      return {};
  }
}

// Structurally equal expressions get one number: the number of a node is
// that of its kind, type, own fields and its children's numbers.
class Numbering {
 public:
  int number(const Expr& e) {
    if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
    std::vector<int64_t> key = {int64_t(e->kind), int64_t(e->dtype.code), e->dtype.bits, e->dtype.lanes};
    bool pure = true;
    switch (e->kind) {  // the node's own fields
      case ExprKind::IntImm:
        key.push_back(static_cast<const IntImmNode&>(*e).value);
        break;
      case ExprKind::FloatImm: {
        double v = static_cast<const FloatImmNode&>(*e).value;
        int64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        key.push_back(bits);
        break;
      }
      case ExprKind::StringImm:
        key.push_back(text_number(static_cast<const StringImmNode&>(*e).value));
        break;
      case ExprKind::Var:
        key.push_back(int64_t(reinterpret_cast<intptr_t>(e.get())));
        break;
      case ExprKind::Binary:
        key.push_back(int64_t(static_cast<const BinaryNode&>(*e).op));
        break;
      case ExprKind::BufferLoad:
        key.push_back(
            int64_t(reinterpret_cast<intptr_t>(static_cast<const BufferLoadNode&>(*e).buffer.get())));
        break;
      case ExprKind::Call: {
        auto& n = static_cast<const CallNode&>(*e);
        key.push_back(int64_t(n.call_kind));
        key.push_back(text_number(n.name));
        pure = n.call_kind != CallKind::Extern && n.name != intrinsic_name(Intrinsic::ParallelStatus);
        break;
      }
      default:  // Not, Cast, Select, Ramp, Broadcast: the type and the operands say it all
        break;
    }
    for (const Expr& c : children(e)) {
      key.push_back(number(c));
      pure = pure && pure_.at(size_t(key.back()));
    }
    auto [it, added] = numbers_.emplace(std::move(key), int(pure_.size()));
    if (added) pure_.push_back(pure);
    memo_[e.get()] = it->second;
    return it->second;
  }
  bool pure(int n) const { return pure_.at(size_t(n)); }

 private:
  int64_t text_number(const std::string& s) {
    return texts_.emplace(s, int64_t(texts_.size())).first->second;
  }

  std::map<std::vector<int64_t>, int> numbers_;
  std::map<std::string, int64_t> texts_;
  std::unordered_map<const ExprNode*, int> memo_;
  std::vector<bool> pure_;
};

// Whether `e` stays where it is: leaves cost nothing to repeat, and ramps
// and broadcasts are how codegen sees a contiguous or a repeated access (a
// load at a variable holding a ramp would be a gather); their scalar parts
// are shared instead.
bool kept(const Expr& e) { return is_leaf(e) || e->kind == ExprKind::Ramp || e->kind == ExprKind::Broadcast; }

// The expressions of one statement, as the rewriter sees them: the shared
// parts bound to variables in the order they are first complete.
class StatementSharing : public Mutator {
 public:
  StatementSharing(Numbering& numbering, int& next_name) : numbering_(numbering), next_name_(next_name) {}

  // Counts the occurrences of each part of `roots`; a repeated part's own
  // parts count once (they are computed once, inside it).
  void count(const std::vector<Expr>& roots) {
    for (const Expr& r : roots) count(r);
  }
  bool any_shared() const {
    for (const auto& [n, c] : counts_)
      if (c >= 2) return true;
    return false;
  }
  // `roots` with the shared parts replaced; `lets` receives the bindings.
  std::vector<Expr> rewrite(const std::vector<Expr>& roots, std::vector<std::pair<Var, Expr>>& lets) {
    lets_ = &lets;
    std::vector<Expr> out;
    for (const Expr& r : roots) out.push_back(r ? mutate(r) : r);
    return out;
  }

 protected:
  // Every kind goes through here: a shared part is its variable.
#define KILN_TIR_SHARE(name)                                        \
  Expr mutate_##name(const Expr& e, const name##Node& n) override { \
    return shared(e, [&] { return Mutator::mutate_##name(e, n); }); \
  }
  KILN_TIR_EXPR_KINDS(KILN_TIR_SHARE)
#undef KILN_TIR_SHARE

 private:
  void count(const Expr& e) {
    if (!e || is_leaf(e)) return;
    int n = numbering_.number(e);
    if (counts_[n]++ > 0) return;
    for (const Expr& c : children(e)) count(c);
  }
  bool shareable(const Expr& e) {
    if (kept(e)) return false;
    int n = numbering_.number(e);
    return numbering_.pure(n) && counts_[n] >= 2;
  }
  template <typename F>
  Expr shared(const Expr& e, F rebuild) {
    if (!shareable(e)) return rebuild();
    int n = numbering_.number(e);
    if (auto it = vars_.find(n); it != vars_.end()) return it->second;
    Expr value = rebuild();
    Var v = make_var("cse" + std::to_string(next_name_++), e->dtype);
    lets_->push_back({v, value});
    vars_[n] = v;
    return v;
  }

  Numbering& numbering_;
  int& next_name_;
  std::map<int, int> counts_;
  std::map<int, Var> vars_;
  std::vector<std::pair<Var, Expr>>* lets_ = nullptr;
};

class ShareCommonSubexpressions : public Mutator {
 protected:
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) override {
    std::vector<Expr> roots = n.indices;
    roots.push_back(n.value);
    return share(s, roots, [&](const std::vector<Expr>& r) {
      return store(n.buffer, std::vector<Expr>(r.begin(), r.end() - 1), r.back());
    });
  }
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode& n) override {
    return share(s, {n.value}, [&](const std::vector<Expr>& r) { return evaluate(r[0]); });
  }
  Stmt mutate_LetStmt(const Stmt& s, const LetStmtNode& n) override {
    Stmt body = mutate(n.body);
    return share(
        s, {n.value}, [&](const std::vector<Expr>& r) { return let_stmt(n.var, r[0], body); },
        body != n.body);
  }
  Stmt mutate_IfThenElse(const Stmt& s, const IfThenElseNode& n) override {
    Stmt then_case = mutate(n.then_case);
    Stmt else_case = n.else_case ? mutate(n.else_case) : n.else_case;
    return share(
        s, {n.cond}, [&](const std::vector<Expr>& r) { return if_then_else(r[0], then_case, else_case); },
        then_case != n.then_case || else_case != n.else_case);
  }

 private:
  template <typename F>
  Stmt share(const Stmt& s, const std::vector<Expr>& roots, F rebuild, bool body_changed = false) {
    StatementSharing sharing(numbering_, next_name_);
    sharing.count(roots);
    if (!sharing.any_shared()) return body_changed ? rebuild(roots) : s;
    std::vector<std::pair<Var, Expr>> lets;
    std::vector<Expr> rewritten = sharing.rewrite(roots, lets);
    if (lets.empty()) return body_changed ? rebuild(roots) : s;
    Stmt out = rebuild(rewritten);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) out = let_stmt(it->first, it->second, out);
    return out;
  }

  Numbering numbering_;
  int next_name_ = 0;
};

}  // namespace

PrimFunc share_common_subexpressions(const PrimFunc& f) {
  return ShareCommonSubexpressions().mutate_function(f);
}

}  // namespace kiln::tir
