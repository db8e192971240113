// lower-scratchpad-alloc: scratchpad (VTCM) allocations become calls into the
// runtime's VTCM pool (kiln/runtime/backend_api.h).
//
// Requires: allocations not lowered yet; buffer sizes in elements of the
// buffer's dtype. Guarantees: the allocate call gets the size in BYTES (numel
// times the element size, for every dtype) and the alignment; a failed
// allocation records an error naming the buffer, its bytes and scope (after
// the pool's own reason) and returns -1; every path out of the buffer's scope
// frees it, including early returns inside it and failed allocations of
// buffers nested in it. A buffer allocated inside a parallel loop is
// allocated by each task; a failure inside the loop releases the buffers
// outside it after the loop, in its failure check (tir/parallel.h).
//
//   allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
//   <body>
// becomes
//   let %A_buf_data = call_extern<handle>("HexagonBackendAllocateVTCM", uint32(2048), uint32(128))
//   if isnull(%A_buf_data) {
//     evaluate call_extern<int32>("KilnBackendPrependLastError", "buffer %A_buf (2048 bytes, scope
//     local.vtcm)") return -1
//   }
//   decl_buffer %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128, data=%A_buf_data]
//   <body, with `return c` becoming `free; return c`>
//   evaluate call_extern<int32>("HexagonBackendFreeVTCM", %A_buf_data)
#include <algorithm>
#include <set>

#include "ir/stable_sort.h"
#include "tir/mutator.h"
#include "tir/transform/alloc_lowering.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

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

Stmt free_call(const Var& data) {
  return evaluate(call_extern(DataType::int32(), "HexagonBackendFreeVTCM", {data}));
}

class LowerPerBuffer : public Mutator {
 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode& n) override {
    // Inner allocations first, so their failure returns get this buffer's free.
    Stmt body = mutate(n.body);
    if (!is_scratchpad(n.buffer->scope)) return body == n.body ? s : allocate(n.buffer, body);
    const BufferNode& b = *n.buffer;
    Expr call = call_extern(DataType::handle(), "HexagonBackendAllocateVTCM",
                            {byte_size(b), int_imm(b.alignment, DataType::uint32())});
    return lowered_allocation(n.buffer, call, body, free_call(b.data));
  }
};

// ---------------------------------------------------------------- static plan
//
// With TirPassOptions::static_scratchpad_plan the function makes ONE pool
// allocation at entry (null-checked, freed on every exit) and each scratchpad
// buffer becomes an address_offset into it. Buffers whose live ranges do not
// overlap share bytes. A live range is the span of statements (in program
// order) that touch the buffer, widened to the whole of a loop that lies
// inside the buffer's allocation when a use is inside it, since a later
// iteration may read what an earlier one wrote. A loop around the allocation
// does not widen it: each iteration allocates the buffer afresh, so buffers
// allocated one after the other in a loop body share bytes like any others.
// Buffers allocated inside a parallel loop are not in the plan: tasks running
// at once would share their bytes. Each task allocates them from the pool as
// without the plan.

struct LiveRange {
  int first = -1, last = -1;
};

class Liveness : public Visitor {
 public:
  std::unordered_map<const BufferNode*, LiveRange> ranges;

 protected:
  void visit_For(const ForNode& n) override {
    loops_.push_back({++counter_, {}});
    Visitor::visit_For(n);
    OpenLoop loop = std::move(loops_.back());
    loops_.pop_back();
    for (const BufferNode* b : loop.widened) {
      LiveRange& r = ranges[b];
      r = {std::min(r.first, loop.start), counter_};
    }
  }
  void visit_BufferStore(const BufferStoreNode& n) override {
    ++counter_;
    touch(n.buffer.get());
    Visitor::visit_BufferStore(n);
  }
  void visit_BufferLoad(const BufferLoadNode& n) override {
    touch(n.buffer.get());
    Visitor::visit_BufferLoad(n);
  }
  void visit_Evaluate(const EvaluateNode& n) override {
    ++counter_;
    Visitor::visit_Evaluate(n);
  }
  void visit_Allocate(const AllocateNode& n) override {
    int at = ++counter_;
    alloc_depth_[n.buffer.get()] = loops_.size();
    Visitor::visit_Allocate(n);
    // An unused buffer still gets a (short) range, at its allocation.
    if (!ranges.count(n.buffer.get())) ranges[n.buffer.get()] = {at, at};
  }

 private:
  struct OpenLoop {
    int start;
    std::set<const BufferNode*> widened;  // buffers used in it that live across its iterations
  };
  void touch(const BufferNode* b) {
    LiveRange& r = ranges[b];
    if (r.first < 0) r.first = counter_;
    r.last = counter_;
    // The outermost open loop inside the buffer's allocation (parameters:
    // outside every loop) carries its contents from one iteration to the next.
    auto it = alloc_depth_.find(b);
    size_t depth = it == alloc_depth_.end() ? 0 : it->second;
    if (depth < loops_.size()) loops_[depth].widened.insert(b);
  }
  int counter_ = 0;
  std::vector<OpenLoop> loops_;
  std::unordered_map<const BufferNode*, size_t> alloc_depth_;
};

// The scratchpad buffers the plan places: those outside parallel loops.
class CollectScratchpad : public Visitor {
 public:
  std::vector<const BufferNode*> buffers;

 protected:
  void visit_Allocate(const AllocateNode& n) override {
    if (is_scratchpad(n.buffer->scope)) buffers.push_back(n.buffer.get());
    Visitor::visit_Allocate(n);
  }
  void visit_For(const ForNode& n) override {
    if (n.for_kind != ForKind::Parallel) Visitor::visit_For(n);
  }
};

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct Candidate {
  const BufferNode* buffer;
  int64_t bytes;
  LiveRange live;
};

// Largest buffers first, each at the lowest aligned offset that no placed
// buffer with an overlapping live range occupies.
std::vector<ScratchpadPlacement> place(const std::vector<const BufferNode*>& buffers,
                                       const std::unordered_map<const BufferNode*, LiveRange>& ranges) {
  std::vector<Candidate> order;
  for (const BufferNode* b : buffers) {
    auto bytes = b->const_bytes();
    KILN_CHECK(bytes.has_value(), "static scratchpad plan: buffer %", b->name,
               " has a dynamic size; the plan needs constant sizes (turn the option off for it)");
    order.push_back({b, *bytes, ranges.at(b)});
  }
  kiln::stable_sort(order, [](const Candidate& x, const Candidate& y) { return x.bytes > y.bytes; });
  std::vector<Candidate> placed_live;
  std::vector<ScratchpadPlacement> placed;
  for (const Candidate& c : order) {
    int64_t offset = 0;
    for (bool moved = true; moved;) {
      moved = false;
      offset = align_up(offset, c.buffer->alignment);
      for (size_t i = 0; i < placed.size(); ++i) {
        const ScratchpadPlacement& q = placed[i];
        const LiveRange& ql = placed_live[i].live;
        bool live_together = c.live.first <= ql.last && ql.first <= c.live.last;
        bool bytes_overlap = offset < q.offset + q.bytes && q.offset < offset + c.bytes;
        if (live_together && bytes_overlap) {
          offset = q.offset + q.bytes;
          moved = true;
        }
      }
    }
    placed.push_back({c.buffer, c.bytes, offset});
    placed_live.push_back(c);
  }
  kiln::stable_sort(
      placed, [](const ScratchpadPlacement& x, const ScratchpadPlacement& y) { return x.offset < y.offset; });
  return placed;
}

class UsePlan : public Mutator {
 public:
  UsePlan(Var pool, const ScratchpadPlan& plan) : pool_(std::move(pool)) {
    for (const ScratchpadPlacement& p : plan.placements) offsets_[p.buffer] = p.offset;
  }

 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode& n) override {
    Stmt body = mutate(n.body);
    auto it = offsets_.find(n.buffer.get());
    if (it == offsets_.end()) return body == n.body ? s : allocate(n.buffer, body);
    Expr address = call_intrinsic(Intrinsic::AddressOffset, {pool_, int_imm(it->second, DataType::int64())});
    return let_stmt(n.buffer->data, address, decl_buffer(n.buffer, body));
  }

 private:
  Var pool_;
  std::unordered_map<const BufferNode*, int64_t> offsets_;
};

PrimFunc lower_with_static_plan(const PrimFunc& f) {
  ScratchpadPlan plan = plan_scratchpad(*f);
  if (plan.placements.empty()) return LowerPerBuffer().mutate_function(f);
  KILN_CHECK(plan.bytes <= int64_t(UINT32_MAX), "static scratchpad plan of @", f->name, " needs ", plan.bytes,
             " bytes, more than a VTCM allocation can hold");
  std::string layout;
  for (const ScratchpadPlacement& p : plan.placements)
    layout +=
        (layout.empty() ? "" : ", ") + std::string("%") + p.buffer->name + " at " + std::to_string(p.offset);
  Var pool = make_var("vtcm_plan_data", DataType::handle());
  // Buffers inside parallel loops, left out of the plan, are lowered one by
  // one before the plan's release goes on every exit.
  Stmt planned = LowerPerBuffer().mutate(UsePlan(pool, plan).mutate(f->body));
  Stmt body = release_on_every_exit(planned, free_call(pool));
  std::string what =
      "the scratchpad plan of @" + f->name + " (" + std::to_string(plan.bytes) + " bytes: " + layout + ")";
  Expr call =
      call_extern(DataType::handle(), "HexagonBackendAllocateVTCM",
                  {int_imm(plan.bytes, DataType::uint32()), int_imm(plan.alignment, DataType::uint32())});
  return make_prim_func(f->name, f->params, let_stmt(pool, call, seq({null_check(pool, what), body})));
}

}  // namespace

ScratchpadPlan plan_scratchpad(const PrimFuncNode& f) {
  CollectScratchpad collect;
  collect.visit(f.body);
  ScratchpadPlan plan;
  if (collect.buffers.empty()) return plan;
  Liveness live;
  live.visit(f.body);
  plan.placements = place(collect.buffers, live.ranges);
  for (const ScratchpadPlacement& p : plan.placements) {
    plan.bytes = std::max(plan.bytes, p.offset + p.bytes);
    plan.alignment = std::max(plan.alignment, p.buffer->alignment);
  }
  return plan;
}

PrimFunc lower_scratchpad_alloc(const PrimFunc& f, const TirPassOptions& options) {
  if (options.static_scratchpad_plan) return lower_with_static_plan(f);
  return LowerPerBuffer().mutate_function(f);
}

}  // namespace kiln::tir
