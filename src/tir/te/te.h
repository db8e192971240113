// Tensor expressions and schedules: the C++ API that writes prim functions.
//
// A tensor is a placeholder (an input), a compute: a shape and an
// expression per element, optionally a reduction (sum, max or product) over reduce
// axes, or an extern: a statement that writes the whole tensor from its
// inputs' buffers (a running sum, a scatter: what no expression per element
// says). A schedule decides how each tensor's loops run (split, fuse,
// reorder, vectorize, unroll, parallel), where a tensor lives (set_scope,
// cache_read/cache_write copy through a buffer of another scope) and where
// it is computed: before its readers (the default), inside a loop of its
// consumer (compute_at) or not at all (compute_inline). lower() writes the
// prim function:
//
//   te::Tensor A = te::placeholder({2048}, DataType::int_(8), "A");
//   te::Tensor B = te::placeholder({2048}, DataType::int_(8), "B");
//   te::Tensor C = te::compute({2048}, [&](const te::Axes& i) { return add(A(i), B(i)); }, "C");
//   te::Schedule s({C});
//   te::Tensor A_buf = s.cache_read(A, "local.vtcm", {C});
//   s[C].vectorize(s[C].leaf(0));
//   tir::PrimFunc f = te::lower(s, {A, B, C}, "alloc_vtcm");
//
// compute_at places a producer's loop nest inside one loop of its consumer;
// bound inference (bound.h) works out the region of the producer the
// consumer reads under that loop, and the producer's buffer holds only that
// region (a VTCM tile instead of the whole tensor):
//
//   te::Tensor A_tile = s.cache_read(A, "global.vtcm", {C});
//   auto [io, ii] = s[C].split(s[C].leaf(0), 256);
//   s[A_tile].compute_at(s[C], io);   // A_tile: Buffer[(256), ...] inside the io loop
//
// Errors a user can make (an unknown scope, a split factor that does not
// divide the extent, a placeholder missing from the arguments, attaching to
// a stage that does not read the tensor) are kiln::Error naming the tensor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tir/tir.h"

namespace kiln::tir::te {

struct TensorNode;
using Tensor = std::shared_ptr<const TensorNode>;
using Axes = std::vector<Var>;

// A loop variable with its extent; reduce axes are made by reduce_axis.
struct IterVar {
  Var var;
  int64_t extent = 0;
};
IterVar reduce_axis(int64_t extent, const std::string& name);

// NanMax: a float maximum that a NaN wins, whichever element holds it
// (Max keeps the other operand of a comparison with NaN). Prod: a product
// (from 1).
enum class ReduceKind : uint8_t { None, Sum, Max, NanMax, Prod };

// The value of a reduction: `combiner` over `axes` of `value`.
struct Reduction {
  ReduceKind kind = ReduceKind::None;
  Expr value;
  std::vector<IterVar> axes;
};
Reduction sum(Expr value, std::vector<IterVar> axes);
Reduction max(Expr value, std::vector<IterVar> axes);
Reduction nan_max(Expr value, std::vector<IterVar> axes);
Reduction prod(Expr value, std::vector<IterVar> axes);

// An extern tensor's statement: given its inputs' buffers (in the order of
// the tensor's inputs) and its own, the statement that writes every element.
using ExternBody = std::function<Stmt(const std::vector<Buffer>& inputs, const Buffer& output)>;

struct TensorNode : std::enable_shared_from_this<TensorNode> {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  // The buffer expressions load from; lower() maps it to the scheduled one.
  Buffer buffer;
  Axes axes;                   // compute: one variable per dimension
  Expr body;                   // compute: the element (the reduced value); null for a placeholder
  Reduction reduction;         // kind None for an element-wise compute
  std::vector<Tensor> inputs;  // the tensors body (or extern_body) reads
  ExternBody extern_body;      // extern: the statement; no axes, no body

  bool is_placeholder() const { return body == nullptr && !extern_body; }
  bool is_extern() const { return extern_body != nullptr; }
  // A load of this tensor at `indices`, recorded as an input of the compute
  // being built.
  Expr operator()(const std::vector<Expr>& indices) const;
  Expr operator()(const Axes& indices) const;
  Expr operator()(std::initializer_list<Expr> indices) const;
};

Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name);
Tensor compute(std::vector<int64_t> shape, const std::function<Expr(const Axes&)>& fcompute,
               std::string name);
Tensor compute(std::vector<int64_t> shape, const std::function<Reduction(const Axes&)>& fcompute,
               std::string name);
// A tensor written by `body` from `inputs`. Its stage has no loops to
// schedule; it is computed whole, at the top level, and its inputs are
// computed into buffers (an inlined input is an error at lower()).
Tensor extern_compute(std::vector<int64_t> shape, DataType dtype, std::vector<Tensor> inputs, ExternBody body,
                      std::string name);

// ---------------------------------------------------------------- schedules

// One loop of a stage's nest, outermost first.
struct Leaf {
  Var var;
  int64_t extent = 0;
  ForKind kind = ForKind::Serial;
  bool reduce = false;
};

class Schedule;

// How one tensor is computed. Loops are named by their variables: leaf(i)
// gives the i-th loop of the current nest.
class Stage {
 public:
  const Var& leaf(size_t i) const;
  const std::vector<Leaf>& leaves() const { return leaves_; }
  const Tensor& tensor() const { return tensor_; }
  bool inlined() const { return inlined_; }
  bool is_output() const { return output_; }
  // Splits a loop into outer (extent / factor) and inner (factor) loops; the
  // factor must divide the extent. Returns {outer, inner}.
  std::pair<Var, Var> split(const Var& loop, int64_t factor);
  // split() for a factor that need not divide the extent: the outer loop
  // runs ceil(extent / factor) times and the body is guarded by index <
  // extent (bound inference still sees whole blocks of `factor`).
  std::pair<Var, Var> split_with_tail(const Var& loop, int64_t factor);
  // Fuses two adjacent loops, outer then inner, into one.
  Var fuse(const Var& outer, const Var& inner);
  // The loops in this order; all of them must be named.
  void reorder(const std::vector<Var>& order);
  void vectorize(const Var& loop) { set_kind(loop, ForKind::Vectorized); }
  void unroll(const Var& loop) { set_kind(loop, ForKind::Unrolled); }
  void parallel(const Var& loop) { set_kind(loop, ForKind::Parallel); }
  // The memory scope of the tensor's buffer: global, local, global.vtcm, local.vtcm.
  void set_scope(const std::string& scope);
  // Computes the tensor inside its consumers' expressions instead of a buffer.
  void compute_inline();
  // Computes the tensor inside `consumer`'s loop `loop`, at the start of each
  // of its iterations: only the region read under that loop, into a buffer
  // of that region's size. `loop` must be one of the consumer's current
  // loops; output tensors are computed whole. lower() checks that the
  // consumer reads the tensor, or a stage computed inside it does (a packed
  // B at an outer tile loop of C, read by C's accumulator computed at an
  // inner one), and that nothing outside the loop reads it.
  void compute_at(Stage& consumer, const Var& loop);
  // Back to the default: the whole tensor, before the stages that read it.
  void compute_root();

  // A split or fuse, kept so lower() can recompute loop extents and axis
  // values once compute_at has shrunk the tensor's region.
  struct Relation {
    enum class Kind : uint8_t { Split, Fuse };
    Kind kind;
    Var outer, inner;    // split: the new loops; fuse: the loops taken
    Var single;          // split: the loop taken; fuse: the new loop
    int64_t factor = 0;  // split only
  };

 private:
  friend class Schedule;
  friend class Lowering;
  size_t find(const Var& loop) const;
  void set_kind(const Var& loop, ForKind kind);

  Tensor tensor_;
  Expr body_;  // the tensor's body with cache reads applied
  ReduceKind reduce_kind_ = ReduceKind::None;
  std::vector<Leaf> roots_;  // the loops before any split or fuse: axes, then reduce axes
  std::vector<Leaf> leaves_;
  std::vector<Relation> relations_;  // in the order they were applied
  MemoryScope scope_ = MemoryScope::Global;
  bool inlined_ = false;
  bool output_ = false;            // one of the tensors the schedule was created from
  Stage* attach_stage_ = nullptr;  // compute_at: the consumer and its loop
  Var attach_loop_;
};

class Schedule {
 public:
  // Stages for the outputs and everything they read, producers first.
  explicit Schedule(const std::vector<Tensor>& outputs);
  Stage& operator[](const Tensor& t);
  const std::vector<std::unique_ptr<Stage>>& stages() const { return stages_; }
  // A copy of `t` in `scope` that `readers` read instead of `t`.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  // `t` is computed into a buffer in `scope` and then copied to `t`.
  Tensor cache_write(const Tensor& t, const std::string& scope);

 private:
  void add(const Tensor& t);
  Stage& make_stage(const Tensor& t, size_t position);
  size_t index_of(const Tensor& t) const;
  std::string fresh_name(const std::string& base) const;
  std::vector<std::unique_ptr<Stage>> stages_;
};

// The prim function computing the schedule: `args` (placeholders and
// outputs, in order) become buffer parameters; every other stage's tensor is
// allocated in its scope for the whole function. The result is verified.
tir::PrimFunc lower(const Schedule& s, const std::vector<Tensor>& args, const std::string& name);

}  // namespace kiln::tir::te
