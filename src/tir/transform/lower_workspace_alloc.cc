// lower-workspace-alloc: main-memory buffers too large for the stack come from
// the runtime's workspace (kiln/runtime/backend_api.h) instead.
//
// Codegen puts an `allocate` of scope global or local on the stack. That is
// right for register tiles and small temporaries, and a crash for a 16 MiB
// buffer (or a 256 KiB one on a thread with a small stack). So an allocation
// whose size is dynamic or above TirPassOptions::stack_limit_bytes becomes a
// workspace allocation, checked and freed like a scratchpad one.
//
// Requires: scratchpad allocations lowered already (they are not touched
// here anyway); sizes in elements. Guarantees: the size passed is in BYTES
// (uint64); a failed allocation records an error naming the buffer, its bytes
// and scope and returns -1; every path out of the buffer's scope frees it.
//
//   allocate %T: Buffer[(1048576), float32]
//   <body>
// becomes
//   let %T_data = call_extern<handle>("KilnBackendAllocWorkspace", uint64(4194304), uint32(64))
//   if isnull(%T_data) {
//     evaluate call_extern<int32>("KilnBackendPrependLastError", "buffer %T (4194304 bytes, scope global)")
//     return -1
//   }
//   decl_buffer %T: Buffer[(1048576), float32, data=%T_data]
//   <body, with `return c` becoming `free; return c`>
//   evaluate call_extern<int32>("KilnBackendFreeWorkspace", %T_data)
#include "tir/mutator.h"
#include "tir/transform/alloc_lowering.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

Expr byte_size(const BufferNode& b) {
  if (auto bytes = b.const_bytes()) return int_imm(*bytes, DataType::uint(64));
  Expr n = int_imm(b.dtype.bytes(), DataType::uint(64));
  for (const Expr& e : b.shape) n = mul(n, cast(DataType::uint(64), e));
  return simplify_expr(n);
}

class LowerLargeAllocations : public Mutator {
 public:
  explicit LowerLargeAllocations(uint64_t limit) : limit_(limit) {}

 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode& n) override {
    // Inner allocations first, so their failure returns get this buffer's free.
    Stmt body = mutate(n.body);
    const BufferNode& b = *n.buffer;
    auto bytes = b.const_bytes();
    bool on_stack = is_scratchpad(b.scope) || (bytes && uint64_t(*bytes) <= limit_);
    if (on_stack) return body == n.body ? s : allocate(n.buffer, body);
    Expr call = call_extern(DataType::handle(), "KilnBackendAllocWorkspace",
                            {byte_size(b), int_imm(b.alignment, DataType::uint32())});
    Stmt release = evaluate(call_extern(DataType::int32(), "KilnBackendFreeWorkspace", {b.data}));
    return lowered_allocation(n.buffer, call, body, release);
  }

 private:
  uint64_t limit_;
};

}  // namespace

PrimFunc lower_workspace_alloc(const PrimFunc& f, const TirPassOptions& options) {
  return LowerLargeAllocations(options.stack_limit_bytes).mutate_function(f);
}

}  // namespace kiln::tir
