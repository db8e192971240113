// verify-scratchpad-capacity: live scratchpad bytes never exceed the target's
// capacity.
//
// Requires: scratchpad allocations not lowered yet (it reads allocate
// statements) and constant buffer sizes. An allocation is live in its body, so
// the live set at any point is the chain of enclosing scratchpad allocations;
// each counts its bytes rounded up to its alignment (what the pool reserves
// at worst). The error names the function, the peak, the capacity, and every
// buffer live at the peak with its size and scope. Changes nothing.
#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

class Capacity : public Visitor {
 public:
  explicit Capacity(const PrimFuncNode& f) : f_(f) {}

  uint64_t peak = 0;
  std::vector<const BufferNode*> peak_set;

 protected:
  void visit_Allocate(const AllocateNode& n) override {
    const BufferNode& b = *n.buffer;
    if (!is_scratchpad(b.scope)) return Visitor::visit_Allocate(n);
    auto bytes = b.const_bytes();
    KILN_CHECK(bytes.has_value(), "@", f_.name, ": scratchpad buffer %", b.name, " (scope ",
               scope_name(b.scope),
               ") has a size that is not known at compile time, so it cannot be "
               "checked against the VTCM capacity; give it constant extents");
    uint64_t reserved = (uint64_t(*bytes) + b.alignment - 1) / b.alignment * b.alignment;
    live_ += reserved;
    chain_.push_back(&b);
    if (live_ > peak) {
      peak = live_;
      peak_set = chain_;
    }
    Visitor::visit_Allocate(n);
    chain_.pop_back();
    live_ -= reserved;
  }

 private:
  const PrimFuncNode& f_;
  uint64_t live_ = 0;
  std::vector<const BufferNode*> chain_;
};

}  // namespace

uint64_t scratchpad_peak_bytes(const PrimFuncNode& f) {
  Capacity c(f);
  c.visit(f.body);
  return c.peak;
}

void verify_scratchpad_capacity(const PrimFuncNode& f, uint64_t capacity) {
  Capacity c(f);
  c.visit(f.body);
  if (c.peak <= capacity) return;
  std::string msg = "@" + f.name + " needs " + std::to_string(c.peak) +
                    " bytes of scratchpad (VTCM) at its peak but the target has " + std::to_string(capacity) +
                    " bytes; live at the peak:";
  for (const BufferNode* b : c.peak_set)
    msg += "\n  %" + b->name + ": " + std::to_string(*b->const_bytes()) + " bytes (" + dtype_str(b->dtype) +
           ", scope " + scope_name(b->scope) + ", align " + std::to_string(b->alignment) + ")";
  msg += "\nuse smaller tiles, free buffers earlier, or target a chip with more VTCM";
  throw Error(msg);
}

}  // namespace kiln::tir
