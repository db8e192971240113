#include "tir/transform/alloc_lowering.h"

#include "tir/mutator.h"
#include "tir/parallel.h"

namespace kiln::tir {

namespace {

// Puts `before` in front of every way out of the function: each return
// statement, and the failure exit of each parallel loop that can return
// (tir/parallel.h), which is a check after the loop: inside the loop a
// return ends one task only, while others may still use the buffer.
class PrefixReturns : public Mutator {
 public:
  explicit PrefixReturns(Stmt before) : before_(std::move(before)) {}

 protected:
  Stmt mutate_Return(const Stmt& s, const ReturnNode&) override { return seq({before_, s}); }

  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    if (n.for_kind != ForKind::Parallel) return Mutator::mutate_For(s, n);
    if (!contains_return(n.body)) return s;
    return seq({s, mutate(parallel_failure_check())});
  }

  Stmt mutate_Seq(const Stmt& s, const SeqNode& n) override {
    // A parallel loop that has its check already (from an inner buffer's
    // lowering) keeps it: the check's return gets this release too.
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < n.stmts.size(); ++i) {
      const Stmt& c = n.stmts[i];
      bool checked =
          is_parallel_loop(c) && i + 1 < n.stmts.size() && is_parallel_failure_check(n.stmts[i + 1]);
      Stmt m = checked ? c : mutate(c);
      changed |= m != c;
      out.push_back(m);
    }
    return changed ? seq(std::move(out)) : s;
  }

 private:
  Stmt before_;
};

}  // namespace

bool always_returns(const Stmt& s) {
  if (auto* r = as<ReturnNode>(s)) return r != nullptr;
  if (auto* q = as<SeqNode>(s)) return !q->stmts.empty() && always_returns(q->stmts.back());
  if (auto* l = as<LetStmtNode>(s)) return always_returns(l->body);
  if (auto* d = as<DeclBufferNode>(s)) return always_returns(d->body);
  if (auto* a = as<AllocateNode>(s)) return always_returns(a->body);
  if (auto* i = as<IfThenElseNode>(s))
    return i->else_case && always_returns(i->then_case) && always_returns(i->else_case);
  return false;
}

std::string describe_buffer(const BufferNode& b) {
  auto bytes = b.const_bytes();
  return "buffer %" + b.name + " (" + (bytes ? std::to_string(*bytes) : std::string("dynamic")) +
         " bytes, scope " + scope_name(b.scope) + ")";
}

Stmt null_check(const Var& data, const std::string& what) {
  return if_then_else(
      call_intrinsic(Intrinsic::IsNull, {data}),
      seq({evaluate(call_extern(DataType::int32(), "KilnBackendPrependLastError", {string_imm(what)})),
           return_stmt(int_imm(-1))}));
}

Stmt release_on_every_exit(const Stmt& body, const Stmt& release) {
  Stmt released = PrefixReturns(release).mutate(body);
  if (always_returns(released)) return released;
  return seq({released, release});
}

Stmt lowered_allocation(const Buffer& buffer, const Expr& allocate_call, const Stmt& body,
                        const Stmt& release) {
  return let_stmt(buffer->data, allocate_call,
                  seq({null_check(buffer->data, describe_buffer(*buffer)),
                       decl_buffer(buffer, release_on_every_exit(body, release))}));
}

}  // namespace kiln::tir
