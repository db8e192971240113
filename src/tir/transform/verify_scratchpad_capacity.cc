// verify-scratchpad-capacity: the scratchpad bytes the lowered function holds
// at once never exceed the target's capacity.
//
// Requires: scratchpad allocations not lowered yet (it reads allocate
// statements) and constant buffer sizes. It checks what will run:
//
// - Without the static plan each allocation is made on its own and is live
//   in its body, so the live set at any point is the chain of enclosing
//   scratchpad allocations; each counts its bytes rounded up to its
//   alignment (what the pool reserves at worst).
// - With the static plan (TirPassOptions::static_scratchpad_plan) the
//   function holds the plan's one pool (plan_scratchpad, rounded up to its
//   alignment) from entry to exit; only the buffers inside parallel loops are
//   still allocated one by one.
//
// The buffers of a parallel loop's body are allocated by each task, and the
// tasks run at once: they count once per task (TirPassOptions::
// parallel_tasks, at most the loop's extent). A parallel loop inside a task
// runs inline on that task's thread (runtime/thread_pool.h), so it does not
// multiply again.
//
// The error names the function, the bytes, the capacity, and every buffer
// held at the peak with its size and scope. Changes nothing.
//
//   allocate %A: Buffer[(204800), int8, scope="global.vtcm"]   (outside)
//   for %i from 0 extent 8 parallel {
//     allocate %T: Buffer[(16384), int8, scope="local.vtcm"]  (each task)
//   }
// holds 204800 + 16384 * min(8, threads) bytes at its peak.
#include <algorithm>

#include "runtime/thread_pool.h"
#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The bytes the pool reserves for `b` at worst: its bytes rounded up to its alignment.
uint64_t reserved_bytes(const PrimFuncNode& f, const BufferNode& b) {
  auto bytes = b.const_bytes();
  KILN_CHECK(bytes.has_value(), "@", f.name, ": scratchpad buffer %", b.name, " (scope ", scope_name(b.scope),
             ") has a size that is not known at compile time, so it cannot be "
             "checked against the VTCM capacity; give it constant extents");
  return align_up(uint64_t(*bytes), uint64_t(b.alignment));
}

// How many tasks of a parallel loop may run at once: `tasks` (0: the host
// runtime's threads), at most the loop's constant extent.
int64_t tasks_of(const ForNode& loop, int tasks) {
  int64_t k = tasks > 0 ? tasks : parallel_num_threads();
  if (auto* extent = as<IntImmNode>(loop.extent)) k = std::min(k, std::max<int64_t>(extent->value, 1));
  return k;
}

// The peak of scratchpad bytes allocated one by one. With `planned`, the
// buffers outside parallel loops are in the static plan and not counted here.
class Capacity : public Visitor {
 public:
  Capacity(const PrimFuncNode& f, int tasks, bool planned) : f_(f), tasks_(tasks), planned_(planned) {}

  uint64_t peak = 0;
  std::vector<const BufferNode*> peak_set;  // held once at the peak
  // The parallel loop at the peak, if any, and what each of its tasks holds.
  const ForNode* peak_loop = nullptr;
  int64_t peak_tasks = 0;
  std::vector<const BufferNode*> per_task;

 protected:
  void visit_Allocate(const AllocateNode& n) override {
    const BufferNode& b = *n.buffer;
    if (!is_scratchpad(b.scope) || planned_) return Visitor::visit_Allocate(n);
    uint64_t reserved = reserved_bytes(f_, b);
    live_ += reserved;
    chain_.push_back(&b);
    if (live_ > peak) {
      peak = live_;
      peak_set = chain_;
      peak_loop = nullptr;
      per_task.clear();
    }
    Visitor::visit_Allocate(n);
    chain_.pop_back();
    live_ -= reserved;
  }
  void visit_For(const ForNode& n) override {
    if (n.for_kind != ForKind::Parallel) return Visitor::visit_For(n);
    // One task's peak; a parallel loop inside it runs inline (one task).
    Capacity task(f_, 1, false);
    task.visit(n.body);
    if (task.peak == 0) return;
    int64_t k = tasks_of(n, tasks_);
    uint64_t held = live_ + uint64_t(k) * task.peak;
    if (held <= peak) return;
    peak = held;
    peak_set = chain_;
    peak_loop = &n;
    peak_tasks = k;
    per_task = task.peak_set;
    for (const BufferNode* b : task.per_task) per_task.push_back(b);
  }

 private:
  const PrimFuncNode& f_;
  const int tasks_;
  const bool planned_;
  uint64_t live_ = 0;
  std::vector<const BufferNode*> chain_;
};

std::string describe(const BufferNode& b) {
  return "%" + b.name + ": " + std::to_string(*b.const_bytes()) + " bytes (" + dtype_str(b.dtype) +
         ", scope " + scope_name(b.scope) + ", align " + std::to_string(b.alignment) + ")";
}

// The lines for what each task of the loop at the peak holds.
std::string describe_tasks(const Capacity& c, int tasks) {
  if (!c.peak_loop) return "";
  std::string msg;
  if (c.peak_tasks == 1) {
    for (const BufferNode* b : c.per_task) msg += "\n  " + describe(*b);
    return msg;
  }
  msg = "\n  in each of " + std::to_string(c.peak_tasks) + " tasks of the parallel loop over %" +
        c.peak_loop->var->name + " (" +
        (tasks > 0 ? "the tasks the target runs at once"
                   : "the host runtime's threads: KILN_NUM_THREADS, else the machine's") +
        "):";
  for (const BufferNode* b : c.per_task) msg += "\n    " + describe(*b);
  return msg;
}

const char* kAdvice = "\nuse smaller tiles, free buffers earlier, or target a chip with more VTCM";

void verify_static_plan(const PrimFuncNode& f, const TirPassOptions& options) {
  ScratchpadPlan plan = plan_scratchpad(f);
  Capacity tasks(f, options.parallel_tasks, true);
  tasks.visit(f.body);
  uint64_t pool = align_up(uint64_t(plan.bytes), uint64_t(plan.alignment));
  uint64_t held = pool + tasks.peak;
  if (held <= options.scratchpad_capacity) return;
  std::string msg = "@" + f.name + " needs " + std::to_string(held) +
                    " bytes of scratchpad (VTCM) with its static scratchpad plan but the target has " +
                    std::to_string(options.scratchpad_capacity) + " bytes:";
  if (!plan.placements.empty())
    msg += "\n  the plan's pool: " + std::to_string(pool) + " bytes (buffers not live together share bytes)";
  for (const ScratchpadPlacement& p : plan.placements)
    msg += "\n    at " + std::to_string(p.offset) + " " + describe(*p.buffer);
  msg += describe_tasks(tasks, options.parallel_tasks);
  throw Error(msg + kAdvice);
}

}  // namespace

uint64_t scratchpad_peak_bytes(const PrimFuncNode& f) {
  Capacity c(f, 1, false);
  c.visit(f.body);
  return c.peak;
}

void verify_scratchpad_capacity(const PrimFuncNode& f, const TirPassOptions& options) {
  if (options.static_scratchpad_plan) return verify_static_plan(f, options);
  Capacity c(f, options.parallel_tasks, false);
  c.visit(f.body);
  if (c.peak <= options.scratchpad_capacity) return;
  std::string msg = "@" + f.name + " needs " + std::to_string(c.peak) +
                    " bytes of scratchpad (VTCM) at its peak but the target has " +
                    std::to_string(options.scratchpad_capacity) + " bytes; live at the peak:";
  for (const BufferNode* b : c.peak_set) msg += "\n  " + describe(*b);
  msg += describe_tasks(c, options.parallel_tasks);
  throw Error(msg + kAdvice);
}

}  // namespace kiln::tir
