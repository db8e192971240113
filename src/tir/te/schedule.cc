// Schedules: per-tensor loop nests and their transformations.
//
// A stage keeps its loops as a list of leaves and the splits and fuses that
// made them from its root loops (one per axis and reduce axis). lower()
// derives each axis's value from them (split: v = outer * factor + inner;
// fuse: outer = f / E, inner = f mod E) and substitutes it into the tensor's
// expression, so every transformation is a rewrite of index expressions,
// never of statements. The relations are kept rather than the values because
// compute_at changes the extents they depend on. compute_at only records the
// attach point: whether the consumer (or a stage computed inside it, or one
// inlined into it) reads the tensor depends on the rest of the schedule, so
// lower() checks it, and infers the bounds.
#include <algorithm>

#include "tir/mutator.h"
#include "tir/te/te.h"

namespace kiln::tir::te {
namespace {

class ReplaceBuffer : public Mutator {
 public:
  ReplaceBuffer(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}

 protected:
  Buffer mutate_buffer_ref(const Buffer& b) override { return b.get() == from_ ? to_ : b; }

 private:
  const BufferNode* from_;
  Buffer to_;
};

MemoryScope parse_scope(const std::string& scope, const std::string& tensor) {
  auto s = scope_from_name(scope);
  if (!s)
    throw Error("tensor " + tensor + ": unknown memory scope \"" + scope + "\" (known: " + scope_names() +
                ")");
  return *s;
}

}  // namespace

// ---------------------------------------------------------------- Stage

const Var& Stage::leaf(size_t i) const {
  if (i >= leaves_.size())
    throw Error("tensor " + tensor_->name + " has " + std::to_string(leaves_.size()) +
                " loops; there is no loop " + std::to_string(i));
  return leaves_[i].var;
}

size_t Stage::find(const Var& loop) const {
  for (size_t i = 0; i < leaves_.size(); ++i)
    if (leaves_[i].var == loop) return i;
  throw Error("tensor " + tensor_->name + ": %" + (loop ? loop->name : std::string("?")) +
              " is not one of its loops (split and fuse replace the loops they take)");
}

void Stage::set_kind(const Var& loop, ForKind kind) { leaves_[find(loop)].kind = kind; }

std::pair<Var, Var> Stage::split(const Var& loop_ref, int64_t factor) {
  size_t i = find(loop_ref);
  if (factor <= 0 || leaves_[i].extent % factor != 0)
    throw Error("tensor " + tensor_->name + ": split factor " + std::to_string(factor) +
                " does not divide the extent " + std::to_string(leaves_[i].extent) + " of %" +
                leaves_[i].var->name);
  return split_with_tail(loop_ref, factor);
}

std::pair<Var, Var> Stage::split_with_tail(const Var& loop_ref, int64_t factor) {
  Var loop = loop_ref;  // may be a reference into leaves_ (leaf(i))
  size_t i = find(loop);
  Leaf old = leaves_[i];
  if (factor <= 0)
    throw Error("tensor " + tensor_->name + ": split factor " + std::to_string(factor) + " must be positive");
  if (old.reduce && old.extent % factor != 0)
    throw Error("tensor " + tensor_->name + ": split factor " + std::to_string(factor) +
                " of the reduce loop %" + old.var->name + " must divide its extent " +
                std::to_string(old.extent));
  Var outer = make_var(old.var->name + "_outer");
  Var inner = make_var(old.var->name + "_inner");
  leaves_[i] = Leaf{outer, (old.extent + factor - 1) / factor, old.kind, old.reduce};
  leaves_.insert(leaves_.begin() + std::ptrdiff_t(i) + 1, Leaf{inner, factor, ForKind::Serial, old.reduce});
  relations_.push_back(Relation{Relation::Kind::Split, outer, inner, old.var, factor});
  return {outer, inner};
}

Var Stage::fuse(const Var& outer_ref, const Var& inner_ref) {
  // Copies: the arguments may be references into leaves_ (leaf(i)).
  Var outer = outer_ref, inner = inner_ref;
  size_t o = find(outer), i = find(inner);
  if (i != o + 1)
    throw Error("tensor " + tensor_->name + ": fuse takes adjacent loops, outer then inner; %" + outer->name +
                " and %" + inner->name + " are not");
  if (leaves_[o].reduce != leaves_[i].reduce)
    throw Error("tensor " + tensor_->name + ": cannot fuse a reduce loop with a spatial loop");
  Var fused = make_var(outer->name + "_" + inner->name + "_fused");
  Leaf f{fused, leaves_[o].extent * leaves_[i].extent, ForKind::Serial, leaves_[o].reduce};
  leaves_.erase(leaves_.begin() + std::ptrdiff_t(i));
  leaves_[o] = f;
  relations_.push_back(Relation{Relation::Kind::Fuse, outer, inner, fused, 0});
  return fused;
}

void Stage::reorder(const std::vector<Var>& order_ref) {
  std::vector<Var> order = order_ref;
  // The named loops take the positions they occupy now, in the given order.
  std::vector<size_t> positions;
  for (const auto& v : order) {
    size_t p = find(v);
    if (std::find(positions.begin(), positions.end(), p) != positions.end())
      throw Error("tensor " + tensor_->name + ": reorder names %" + v->name + " twice");
    positions.push_back(p);
  }
  std::vector<Leaf> picked;
  for (size_t p : positions) picked.push_back(leaves_[p]);
  std::sort(positions.begin(), positions.end());
  for (size_t k = 0; k < positions.size(); ++k) leaves_[positions[k]] = picked[k];
}

void Stage::set_scope(const std::string& scope) { scope_ = parse_scope(scope, tensor_->name); }

void Stage::compute_inline() {
  if (tensor_->is_placeholder())
    throw Error("tensor " + tensor_->name + " is a placeholder and cannot be inlined");
  if (reduce_kind_ != ReduceKind::None)
    throw Error("tensor " + tensor_->name + " is a reduction and cannot be inlined");
  if (tensor_->is_extern())
    throw Error("tensor " + tensor_->name + " is an extern statement and cannot be inlined");
  inlined_ = true;
  attach_stage_ = nullptr;
  attach_loop_ = nullptr;
}

void Stage::compute_at(Stage& consumer, const Var& loop_ref) {
  Var loop = loop_ref;  // may be a reference into consumer.leaves_ (leaf(i))
  const std::string& name = tensor_->name;
  const std::string where = "tensor " + name + ": compute_at %" + (loop ? loop->name : std::string("?")) +
                            " of " + consumer.tensor_->name;
  if (tensor_->is_placeholder())
    throw Error("tensor " + name + " is a placeholder; only computed tensors can be computed at a loop");
  if (tensor_->is_extern())
    throw Error(where + ": " + name +
                " is an extern statement, which writes the whole tensor at the top level");
  if (output_)
    throw Error(where + ": " + name +
                " is an output of the schedule and is written whole; compute_at applies to "
                "intermediate tensors (cache_write gives an output an intermediate stage)");
  if (&consumer == this) throw Error(where + ": a tensor cannot be computed inside its own loops");
  for (const Stage* s = &consumer; s; s = s->attach_stage_)
    if (s == this)
      throw Error(where + ": " + consumer.tensor_->name + " is itself computed inside " + name +
                  ", so this would make a cycle");
  if (consumer.inlined_) throw Error(where + ": " + consumer.tensor_->name + " is inlined and has no loops");
  bool is_leaf = false;
  for (const Leaf& l : consumer.leaves_) is_leaf = is_leaf || l.var == loop;
  if (!is_leaf)
    throw Error(where + ": %" + (loop ? loop->name : std::string("?")) + " is not one of the loops of " +
                consumer.tensor_->name + " (split and fuse replace the loops they take)");
  inlined_ = false;
  attach_stage_ = &consumer;
  attach_loop_ = loop;
}

void Stage::compute_root() {
  inlined_ = false;
  attach_stage_ = nullptr;
  attach_loop_ = nullptr;
}

// ---------------------------------------------------------------- Schedule

Schedule::Schedule(const std::vector<Tensor>& outputs) {
  for (const auto& t : outputs) add(t);
  for (const auto& t : outputs) (*this)[t].output_ = true;
}

void Schedule::add(const Tensor& t) {
  for (const auto& s : stages_)
    if (s->tensor_ == t) return;
  for (const auto& in : t->inputs) add(in);
  make_stage(t, stages_.size());
}

Stage& Schedule::make_stage(const Tensor& t, size_t position) {
  auto s = std::make_unique<Stage>();
  s->tensor_ = t;
  s->body_ = t->body;
  s->reduce_kind_ = t->reduction.kind;
  for (size_t k = 0; k < t->axes.size(); ++k)
    s->roots_.push_back(Leaf{t->axes[k], t->shape[k], ForKind::Serial, false});
  for (const auto& r : t->reduction.axes) s->roots_.push_back(Leaf{r.var, r.extent, ForKind::Serial, true});
  s->leaves_ = s->roots_;
  Stage& ref = *s;
  stages_.insert(stages_.begin() + std::ptrdiff_t(position), std::move(s));
  return ref;
}

size_t Schedule::index_of(const Tensor& t) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i]->tensor_ == t) return i;
  throw Error("tensor " + t->name +
              " is not part of this schedule (create the schedule from the outputs that use it)");
}

Stage& Schedule::operator[](const Tensor& t) { return *stages_[index_of(t)]; }

std::string Schedule::fresh_name(const std::string& base) const {
  std::string name = base;
  for (int n = 1;; ++n) {
    bool taken = false;
    for (const auto& s : stages_) taken = taken || s->tensor_->name == name;
    if (!taken) return name;
    name = base + std::to_string(n);
  }
}

Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers) {
  MemoryScope sc = parse_scope(scope, t->name);
  size_t at = index_of(t);
  for (const auto& r : readers) index_of(r);
  Tensor copy = compute(
      t->shape, [&](const Axes& i) { return (*t)(i); }, fresh_name(t->name + "_buf"));
  make_stage(copy, at + 1).scope_ = sc;
  for (const auto& r : readers) {
    Stage& s = (*this)[r];
    if (r->is_extern())
      throw Error("tensor " + r->name + " is an extern statement; cache_read cannot redirect its reads");
    if (!s.body_) throw Error("tensor " + r->name + " is a placeholder and reads nothing");
    s.body_ = ReplaceBuffer(t->buffer.get(), copy->buffer).mutate(s.body_);
  }
  return copy;
}

Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  MemoryScope sc = parse_scope(scope, t->name);
  size_t at = index_of(t);
  if (t->is_placeholder() || t->is_extern())
    throw Error("tensor " + t->name + " is " + (t->is_extern() ? "an extern statement" : "a placeholder") +
                "; cache_write needs a compute");
  // The cache computes what t computed, on fresh axes; t becomes a copy of it.
  auto cache = std::make_shared<TensorNode>();
  cache->name = fresh_name(t->name + "_" + scope_name(sc));
  std::replace(cache->name.begin(), cache->name.end(), '.', '_');
  cache->dtype = t->dtype;
  cache->shape = t->shape;
  cache->buffer = make_buffer(cache->name, t->dtype, t->buffer->shape);
  std::unordered_map<const VarNode*, Expr> rename;
  for (const auto& a : t->axes) {
    cache->axes.push_back(make_var(a->name));
    rename[a.get()] = cache->axes.back();
  }
  Stage& old = *stages_[at];
  cache->body = substitute(old.body_, rename);
  cache->reduction = t->reduction;
  cache->inputs = t->inputs;
  Stage& s = make_stage(cache, at);
  s.scope_ = sc;
  s.body_ = cache->body;
  // t starts again from its plain axes, since its reduce loops are gone (so
  // cache_write comes before the rest of t's schedule).
  Stage& target = *stages_[at + 1];
  target.body_ = load(cache->buffer, std::vector<Expr>(t->axes.begin(), t->axes.end()));
  target.reduce_kind_ = ReduceKind::None;
  target.roots_.resize(t->axes.size());
  target.leaves_ = target.roots_;
  target.relations_.clear();
  return cache;
}

}  // namespace kiln::tir::te
