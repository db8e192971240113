// lower-scratchpad-alloc: scratchpad (VTCM) allocations become calls into the
// runtime's VTCM pool (kiln/runtime/backend_api.h).
//
// Requires: allocations not lowered yet; buffer sizes in elements of the
// buffer's dtype. Guarantees: the allocate call gets the size in BYTES (numel
// times the element size, for every dtype) and the alignment; a failed
// allocation records an error naming the buffer, its bytes and scope (after
// the pool's own reason) and returns -1; every path out of the buffer's scope
// frees it, including early returns inside it and failed allocations of
// buffers nested in it.
//
//   allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
//   <body>
// becomes
//   let %A_buf_data = call_extern<handle>("HexagonBackendAllocateVTCM", uint32(2048), uint32(128))
//   if isnull(%A_buf_data) {
//     evaluate call_extern<int32>("KilnBackendPrependLastError", "buffer %A_buf (2048 bytes, scope local.vtcm)")
//     return -1
//   }
//   decl_buffer %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128, data=%A_buf_data]
//   <body, with `return c` becoming `free; return c`>
//   evaluate call_extern<int32>("HexagonBackendFreeVTCM", %A_buf_data)
#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// Puts `before` in front of every return statement.
class PrefixReturns : public Mutator {
 public:
  explicit PrefixReturns(Stmt before) : before_(std::move(before)) {}

 protected:
  Stmt mutate_Return(const Stmt& s, const ReturnNode&) override { return seq({before_, s}); }

 private:
  Stmt before_;
};

// True when the statement always ends in a return (the code after it is dead).
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

// The size in bytes as a uint32 expression (the allocate call's type).
Expr byte_size(const BufferNode& b) {
  if (auto bytes = b.const_bytes()) {
    KILN_CHECK(*bytes <= int64_t(UINT32_MAX), "scratchpad buffer %", b.name, " needs ", *bytes,
               " bytes, more than a VTCM allocation can hold");
    return int_imm(*bytes, DataType::uint32());
  }
  Expr n = int_imm(b.dtype.bytes(), DataType::uint32());
  for (const Expr& e : b.shape) n = mul(n, cast(DataType::uint32(), e));
  return simplify_expr(n);
}

std::string describe(const BufferNode& b) {
  auto bytes = b.const_bytes();
  return "buffer %" + b.name + " (" + (bytes ? std::to_string(*bytes) : std::string("dynamic")) +
         " bytes, scope " + scope_name(b.scope) + ")";
}

Stmt free_call(const Var& data) {
  return evaluate(call_extern(DataType::int32(), "HexagonBackendFreeVTCM", {data}));
}

// The null check: record the error (the pool's reason is kept after ours) and leave.
Stmt null_check(const Var& data, const std::string& what) {
  return if_then_else(
      call_intrinsic(Intrinsic::IsNull, {data}),
      seq({evaluate(call_extern(DataType::int32(), "KilnBackendPrependLastError", {string_imm(what)})),
           return_stmt(int_imm(-1))}));
}

class LowerPerBuffer : public Mutator {
 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode& n) override {
    // Inner allocations first, so their failure returns get this buffer's free.
    Stmt body = mutate(n.body);
    if (!is_scratchpad(n.buffer->scope)) return body == n.body ? s : allocate(n.buffer, body);
    const BufferNode& b = *n.buffer;
    Var data = b.data;
    Expr call = call_extern(DataType::handle(), "HexagonBackendAllocateVTCM",
                            {byte_size(b), int_imm(b.alignment, DataType::uint32())});
    Stmt release = free_call(data);
    body = PrefixReturns(release).mutate(body);
    std::vector<Stmt> scope = {body};
    if (!always_returns(body)) scope.push_back(release);
    return let_stmt(data, call,
                    seq({null_check(data, describe(b)), decl_buffer(n.buffer, seq(std::move(scope)))}));
  }
};

}  // namespace

PrimFunc lower_scratchpad_alloc(const PrimFunc& f, const TirPassOptions& options) {
  KILN_CHECK(!options.static_scratchpad_plan,
             "lower-scratchpad-alloc: the static scratchpad plan is not implemented yet");
  return LowerPerBuffer().mutate_function(f);
}

}  // namespace kiln::tir
