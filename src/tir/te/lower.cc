// lower(schedule, args, name): a schedule becomes a prim function.
//
// Each stage (producers first) becomes one loop nest writing its buffer. A
// reduction writes its initial value just before its first reduce loop, over
// the spatial loops inside that one. Arguments become buffer parameters.
// Stages computed at the top level have their buffers allocated, in their
// scope, around the whole body, so the scratchpad lowering sees one allocate
// per buffer. A stage computed at a consumer's loop (compute_at) has its nest
// and its allocation at the start of that loop's body, sized by bound
// inference: the region of the tensor the consumer's body under that loop
// reads, with the loops outside fixed and those inside running. Its loads
// are rebased to the region's first index:
//
//   for %i0_outer from 0 extent 4 {          (B[i] = T[i] + T[i + 1] + T[i + 2])
//     allocate %T: Buffer[(10), float32]
//     for %i0 from 0 extent 10 {
//       %T[%i0] = %A[%i0_outer * 8 + %i0] * 2.0
//     }
//     for %i0_inner from 0 extent 8 {
//       %B[%i0_outer * 8 + %i0_inner] = %T[%i0_inner] + %T[%i0_inner + 1] + %T[%i0_inner + 2]
//     }
//   }
//
// Inlined stages have no nest: loads of them are replaced by their
// expression at the load's indices. An extern stage's nest is its
// statement, on the function's buffers.
#include <algorithm>
#include <limits>
#include <set>

#include "tir/mutator.h"
#include "tir/te/bound.h"
#include "tir/te/te.h"

namespace kiln::tir::te {
namespace {

// HVX vectors are 128 bytes; scratchpad buffers are aligned to them.
constexpr int64_t kScratchpadAlignment = 128;
constexpr size_t kNone = std::numeric_limits<size_t>::max();

// Replaces loads of inlined tensors by their expression, recursively.
class Inliner : public Mutator {
 public:
  std::unordered_map<const BufferNode*, std::pair<const TensorNode*, Expr>> bodies;

 protected:
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    auto it = bodies.find(n.buffer.get());
    if (it == bodies.end()) return Mutator::mutate_BufferLoad(e, n);
    const auto& [tensor, body] = it->second;
    std::unordered_map<const VarNode*, Expr> at;
    for (size_t k = 0; k < n.indices.size(); ++k) at[tensor->axes[k].get()] = mutate(n.indices[k]);
    return mutate(substitute(body, at));
  }
};

// Maps the tensors' buffers to the function's and rebases indices of
// buffers that hold a region.
class Remap : public Mutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> buffers;
  std::unordered_map<const BufferNode*, std::vector<Expr>> region_min;

 protected:
  Buffer mutate_buffer_ref(const Buffer& b) override {
    auto it = buffers.find(b.get());
    return it == buffers.end() ? b : it->second;
  }
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    auto it = region_min.find(n.buffer.get());
    if (it == region_min.end()) return Mutator::mutate_BufferLoad(e, n);
    std::vector<Expr> indices;
    for (size_t k = 0; k < n.indices.size(); ++k)
      indices.push_back(rebase_index(mutate(n.indices[k]), it->second[k]));
    return load(buffers.at(n.buffer.get()), indices);
  }
};

// The loads of one buffer in an expression.
class CollectLoads : public Visitor {
 public:
  explicit CollectLoads(const BufferNode* b) : target(b) {}
  const BufferNode* target;
  std::vector<const BufferLoadNode*> loads;

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    if (n.buffer.get() == target) loads.push_back(&n);
    Visitor::visit_BufferLoad(n);
  }
};

Expr reduce_init(ReduceKind kind, DataType t) {
  if (kind == ReduceKind::Sum) return t.is_float() ? float_imm(0.0, t) : int_imm(0, t);
  if (kind == ReduceKind::Prod) return t.is_float() ? float_imm(1.0, t) : int_imm(1, t);
  if (t.is_float()) return float_imm(-std::numeric_limits<double>::infinity(), t);
  if (t.is_uint()) return int_imm(0, t);
  return int_imm(t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits - 1)), t);
}

bool contains(const std::vector<Tensor>& v, const Tensor& t) {
  for (const auto& x : v)
    if (x == t) return true;
  return false;
}

std::string unique_name(const std::string& base, const std::set<std::string>& taken) {
  std::string name = base;
  for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
  return name;
}

}  // namespace

// Friend of Stage: reads the schedule's private state.
class Lowering {
 public:
  Lowering(const Schedule& s, const std::vector<Tensor>& args, const std::string& name)
      : s_(s), args_(args), name_(name) {}
  PrimFunc run();

 private:
  // What lowering decides for one stage.
  struct Info {
    const Stage* stage = nullptr;
    bool computed = false;  // has a nest: not a placeholder, not inlined
    bool is_arg = false;
    size_t parent = kNone;  // compute_at: the consumer's index and the loop's position
    size_t attach_leaf = 0;
    std::vector<Leaf> leaves;      // this function's loops (renamed, extents of the region)
    std::vector<Expr> region_min;  // per axis: first index of the region (0 at the top level)
    std::vector<int64_t> region_extent;
    std::vector<Expr> index;   // per axis: the index into the buffer, an expression of leaves
    std::vector<Expr> guards;  // index < extent, where a split does not divide the region
    Expr value;                // the element, in leaves, with inlined stages substituted
    Buffer buffer;
  };

  void check_and_attach();
  void infer_region(size_t p);
  std::optional<RangingVars> ranging_for_reader(size_t reader, size_t p, size_t* outside);
  void derive_loops(size_t i);
  Stmt nest(size_t i);
  Stmt init_nest(size_t i, size_t first_reduce);
  Stmt with_attached(size_t i, size_t leaf, Stmt body);
  std::string where(size_t p) const;

  const Schedule& s_;
  const std::vector<Tensor>& args_;
  const std::string& name_;
  std::vector<Info> info_;
  Inliner inliner_;
  Remap remap_;
};

std::string Lowering::where(size_t p) const {
  const Info& in = info_[p];
  const Stage& c = *info_[in.parent].stage;
  return "tensor " + in.stage->tensor_->name + " is computed at %" + c.leaves_[in.attach_leaf].var->name +
         " of " + c.tensor_->name;
}

void Lowering::check_and_attach() {
  const auto& stages = s_.stages();
  info_.resize(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& st = *stages[i];
    Info& in = info_[i];
    in.stage = &st;
    in.is_arg = contains(args_, st.tensor_);
    in.computed = !st.tensor_->is_placeholder() && !st.inlined_;
    if (st.tensor_->is_placeholder() && !in.is_arg)
      throw Error("lower @" + name_ + ": placeholder " + st.tensor_->name +
                  " is not among the arguments; pass it in `args`");
    if (st.inlined_) {
      if (in.is_arg)
        throw Error("lower @" + name_ + ": tensor " + st.tensor_->name +
                    " is an argument and cannot be inlined");
      inliner_.bodies[st.tensor_->buffer.get()] = {st.tensor_.get(), st.body_};
    }
  }
  // An extern statement reads its inputs' buffers: none of them inlined.
  for (const auto& st : stages) {
    if (!st->tensor_->is_extern()) continue;
    for (const auto& x_stage : stages)
      if (x_stage->inlined_ && std::find(st->tensor_->inputs.begin(), st->tensor_->inputs.end(),
                                         x_stage->tensor_) != st->tensor_->inputs.end())
        throw Error("lower @" + name_ + ": tensor " + x_stage->tensor_->name +
                    " is inlined, but the extern tensor " + st->tensor_->name +
                    " reads its buffer; compute it into one (do not inline it)");
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& st = *stages[i];
    if (!st.attach_stage_ || !info_[i].computed) continue;
    const std::string at = "lower @" + name_ + ": tensor " + st.tensor_->name + " is computed at %" +
                           st.attach_loop_->name + " of " + st.attach_stage_->tensor_->name;
    if (info_[i].is_arg) throw Error(at + ", but it is an argument, and arguments are written whole");
    size_t parent = kNone;
    for (size_t j = 0; j < stages.size(); ++j)
      if (stages[j].get() == st.attach_stage_) parent = j;
    if (parent == kNone) throw Error(at + ", which is not a stage of this schedule");
    if (!info_[parent].computed) throw Error(at + ", which is inlined and has no loops");
    const auto& leaves = st.attach_stage_->leaves_;
    size_t leaf = kNone;
    for (size_t k = 0; k < leaves.size(); ++k)
      if (leaves[k].var == st.attach_loop_) leaf = k;
    if (leaf == kNone)
      throw Error(at + ", which is no longer one of its loops (split and fuse replace the loops they take)");
    // Readers come after what they read: nothing computed inside an earlier
    // stage can read this one (infer_region checks the later ones).
    if (parent < i)
      throw Error(at + ", but " + st.attach_stage_->tensor_->name + " does not read " + st.tensor_->name +
                  ", and neither does any stage computed inside it");
    info_[i].parent = parent;
    info_[i].attach_leaf = leaf;
  }
}

// The loops that run while `reader` reads p's region: the reader's own, and
// those of the stages it is computed inside, up to p's attach point. nullopt
// when the reader is not inside that loop; `outside` is then the stage of
// its chain that is not.
std::optional<RangingVars> Lowering::ranging_for_reader(size_t reader, size_t p, size_t* outside) {
  size_t c = info_[p].parent;
  RangingVars ranging;
  for (size_t cur = reader;;) {
    const Info& in = info_[cur];
    size_t first = cur == c ? info_[p].attach_leaf + 1 : 0;
    for (size_t k = first; k < in.leaves.size(); ++k) ranging[in.leaves[k].var.get()] = in.leaves[k].extent;
    if (cur == c) return ranging;
    if (in.parent == kNone || (in.parent == c && in.attach_leaf < info_[p].attach_leaf)) {
      *outside = cur;
      return std::nullopt;
    }
    cur = in.parent;
  }
}

void Lowering::infer_region(size_t p) {
  Info& in = info_[p];
  const TensorNode& t = *in.stage->tensor_;
  const std::string& consumer = info_[in.parent].stage->tensor_->name;
  // Per axis, the union of what every load of every reader touches; nullopt
  // once one of them cannot be bounded.
  std::vector<std::optional<Interval>> region(t.shape.size());
  bool read = false;
  std::string outside;
  for (size_t r = p + 1; r < info_.size(); ++r) {
    if (!info_[r].computed) continue;
    const TensorNode& reader = *info_[r].stage->tensor_;
    if (reader.is_extern()) {
      if (std::find(reader.inputs.begin(), reader.inputs.end(), in.stage->tensor_) != reader.inputs.end())
        throw Error("lower @" + name_ + ": " + where(p) + ", but the extern tensor " + reader.name +
                    " reads all of it; compute it at the top level");
      continue;
    }
    CollectLoads loads(t.buffer.get());
    loads.visit(info_[r].value);
    if (loads.loads.empty()) continue;
    size_t out = kNone;
    auto ranging = ranging_for_reader(r, p, &out);
    if (!ranging) {
      const std::string& name = info_[r].stage->tensor_->name;
      outside = out == r ? name : name + ", computed inside " + info_[out].stage->tensor_->name + ",";
      continue;
    }
    for (const BufferLoadNode* l : loads.loads) {
      for (size_t k = 0; k < t.shape.size(); ++k) {
        auto b = bound_of(l->indices[k], *ranging);
        region[k] = !read ? b : b && region[k] ? union_of(*region[k], *b) : std::nullopt;
      }
      read = true;
    }
  }
  if (!read)
    throw Error("lower @" + name_ + ": " + where(p) + ", but " + consumer + " does not read " + t.name +
                ", and neither does any stage computed inside it");
  if (!outside.empty())
    throw Error("lower @" + name_ + ": " + where(p) + ", but " + outside +
                " reads it outside that loop; compute it at a loop that encloses all its readers");
  for (size_t k = 0; k < t.shape.size(); ++k) {
    // What cannot be bounded by a constant extent is computed whole.
    auto extent = region[k] ? region[k]->extent() : std::nullopt;
    if (extent && *extent > 0 && *extent <= t.shape[k]) {
      in.region_min.push_back(region[k]->lo.to_expr());
      in.region_extent.push_back(*extent);
    } else {
      in.region_min.push_back(int_imm(0));
      in.region_extent.push_back(t.shape[k]);
    }
  }
}

// Loop extents and axis values from the region, through the stage's splits
// and fuses; renames loops that would shadow an enclosing one.
void Lowering::derive_loops(size_t i) {
  Info& in = info_[i];
  const Stage& st = *in.stage;
  const TensorNode& t = *st.tensor_;
  if (t.is_extern()) {  // no loops: the statement writes the whole tensor
    for (int64_t e : t.shape) {
      in.region_min.push_back(int_imm(0));
      in.region_extent.push_back(e);
    }
    return;
  }
  size_t rank = t.axes.size();
  if (in.parent == kNone) {
    for (size_t k = 0; k < rank; ++k) {
      in.region_min.push_back(int_imm(0));
      in.region_extent.push_back(t.shape[k]);
    }
  }
  std::unordered_map<const VarNode*, int64_t> extent;
  for (size_t k = 0; k < st.roots_.size(); ++k)
    extent[st.roots_[k].var.get()] = k < rank ? in.region_extent[k] : st.roots_[k].extent;
  bool exact = true;
  for (const Stage::Relation& r : st.relations_) {
    if (r.kind == Stage::Relation::Kind::Split) {
      int64_t whole = extent.at(r.single.get());
      // A region smaller than the factor is one inner loop of its size.
      int64_t inner = std::min(whole, r.factor);
      extent[r.outer.get()] = (whole + inner - 1) / inner;
      extent[r.inner.get()] = inner;
      exact = exact && whole % inner == 0;
    } else {
      extent[r.single.get()] = extent.at(r.outer.get()) * extent.at(r.inner.get());
    }
  }
  std::set<std::string> taken;
  for (size_t a = in.parent; a != kNone; a = info_[a].parent)
    for (const Leaf& l : info_[a].leaves) taken.insert(l.var->name);
  std::unordered_map<const VarNode*, Expr> value;
  for (const Leaf& l : st.leaves_) {
    Leaf renamed = l;
    renamed.extent = extent.at(l.var.get());
    if (taken.count(l.var->name)) renamed.var = make_var(unique_name(l.var->name, taken), l.var->dtype);
    taken.insert(renamed.var->name);
    value[l.var.get()] = renamed.var;
    in.leaves.push_back(renamed);
  }
  for (size_t r = st.relations_.size(); r-- > 0;) {
    const Stage::Relation& rel = st.relations_[r];
    if (rel.kind == Stage::Relation::Kind::Split) {
      int64_t inner = extent.at(rel.inner.get());
      value[rel.single.get()] =
          add(mul(value.at(rel.outer.get()), int_imm(inner)), value.at(rel.inner.get()));
    } else {
      Expr f = value.at(rel.single.get());
      int64_t inner = extent.at(rel.inner.get());
      value[rel.outer.get()] = div(f, int_imm(inner));
      value[rel.inner.get()] = mod(f, int_imm(inner));
    }
  }
  RangingVars all;
  for (const Leaf& l : in.leaves) all[l.var.get()] = l.extent;
  std::unordered_map<const VarNode*, Expr> axis;
  for (size_t k = 0; k < st.roots_.size(); ++k) {
    const Var& root = st.roots_[k].var;
    Expr v = value.at(root.get());
    if (k >= rank) {
      axis[root.get()] = v;
      continue;
    }
    in.index.push_back(v);
    axis[root.get()] = is_const_int(in.region_min[k], 0)
                           ? v
                           : (Affine::of(in.region_min[k]) + Affine::of(v)).to_expr(v->dtype);
    if (exact) continue;
    auto b = bound_of(v, all);
    auto hi = b ? b->hi.as_constant() : std::nullopt;
    if (!hi || *hi >= in.region_extent[k]) in.guards.push_back(lt(v, int_imm(in.region_extent[k], v->dtype)));
  }
  in.value = inliner_.mutate(substitute(st.body_, axis));
}

Stmt Lowering::with_attached(size_t i, size_t leaf, Stmt body) {
  std::vector<size_t> children;
  for (size_t j = 0; j < info_.size(); ++j)
    if (info_[j].computed && info_[j].parent == i && info_[j].attach_leaf == leaf) children.push_back(j);
  if (children.empty()) return body;
  std::vector<Stmt> stmts;
  for (size_t c : children) stmts.push_back(nest(c));
  stmts.push_back(body);
  body = seq(stmts);
  for (size_t k = children.size(); k-- > 0;) body = allocate(info_[children[k]].buffer, body);
  return body;
}

Expr all_of(const std::vector<Expr>& conds) {
  Expr c = conds[0];
  for (size_t k = 1; k < conds.size(); ++k) c = binary(BinaryOp::And, c, conds[k]);
  return c;
}

// The initial value of a reduction, over the spatial loops inside its first
// reduce loop (all of them when it has none).
Stmt Lowering::init_nest(size_t i, size_t first_reduce) {
  const Info& in = info_[i];
  std::unordered_map<const VarNode*, Expr> fresh;
  std::vector<Leaf> loops;
  for (size_t k = first_reduce == kNone ? 0 : first_reduce + 1; k < in.leaves.size(); ++k) {
    if (in.leaves[k].reduce) continue;
    Leaf l = in.leaves[k];
    l.var = make_var(l.var->name, l.var->dtype);
    fresh[in.leaves[k].var.get()] = l.var;
    loops.push_back(l);
  }
  std::vector<Expr> index;
  for (const Expr& e : in.index) index.push_back(substitute(e, fresh));
  Stmt body = store(in.buffer, index, reduce_init(in.stage->reduce_kind_, in.stage->tensor_->dtype));
  if (!in.guards.empty()) {
    std::vector<Expr> guards;
    for (const Expr& g : in.guards) guards.push_back(substitute(g, fresh));
    body = if_then_else(all_of(guards), body);
  }
  for (size_t k = loops.size(); k-- > 0;)
    body = for_loop(loops[k].var, int_imm(0), int_imm(loops[k].extent), loops[k].kind, body);
  return body;
}

Stmt Lowering::nest(size_t i) {
  const Info& in = info_[i];
  const TensorNode& t = *in.stage->tensor_;
  if (t.is_extern()) {
    std::vector<Buffer> inputs;
    for (const Tensor& x : t.inputs) inputs.push_back(x->buffer);
    return remap_.mutate(t.extern_body(inputs, t.buffer));
  }
  ReduceKind kind = in.stage->reduce_kind_;
  Expr value = remap_.mutate(in.value);
  if (kind != ReduceKind::None) {
    Expr old = load(in.buffer, in.index);
    if (kind == ReduceKind::Sum) {
      value = add(old, value);
    } else if (kind == ReduceKind::Max) {
      // The element wins only when it is greater (x86's vmaxps v, old): a
      // NaN element never does, as in the reference kernels' max pools
      // (v > best ? v : best) and roi_align (std::max(best, v)).
      value = tir::max(value, old);
    } else if (kind == ReduceKind::Prod) {
      value = mul(old, value);
    } else {
      // NanMax: max(v, old) is old when either is NaN (x86's vmaxps v, old),
      // so a NaN maximum stays; a NaN v replaces it: a vmaxps, a test of v
      // for NaN and a blend (the code generator's nan_keeping_max; a max
      // over 64 x 56 x 56, AVX-512: 15.9 us for a second pass that counted
      // NaNs, 6.3 in one with its accumulators interleaved).
      value = select(binary(BinaryOp::NE, value, value), value, tir::max(value, old));
    }
  }
  Stmt body = store(in.buffer, in.index, value);
  if (!in.guards.empty()) body = if_then_else(all_of(in.guards), body);
  size_t first_reduce = kNone;
  for (size_t k = 0; k < in.leaves.size() && first_reduce == kNone; ++k)
    if (in.leaves[k].reduce) first_reduce = k;
  for (size_t k = in.leaves.size(); k-- > 0;) {
    const Leaf& l = in.leaves[k];
    body = for_loop(l.var, int_imm(0), int_imm(l.extent), l.kind, with_attached(i, k, body));
    if (kind != ReduceKind::None && k == first_reduce) body = seq({init_nest(i, k), body});
  }
  if (kind != ReduceKind::None && first_reduce == kNone) body = seq({init_nest(i, kNone), body});
  return body;
}

PrimFunc Lowering::run() {
  check_and_attach();
  // Consumers first: a region is inferred from its readers' loops, which
  // come later in the stage order.
  for (size_t i = info_.size(); i-- > 0;) {
    if (!info_[i].computed) continue;
    if (info_[i].parent != kNone) infer_region(i);
    derive_loops(i);
  }
  std::vector<Buffer> allocs;
  for (Info& in : info_) {
    const Stage& st = *in.stage;
    if (st.inlined_) continue;
    const TensorNode& t = *st.tensor_;
    std::vector<Expr> shape = t.buffer->shape;
    if (in.parent != kNone) {
      shape.clear();
      for (int64_t e : in.region_extent) shape.push_back(int_imm(e));
      remap_.region_min[t.buffer.get()] = in.region_min;
    }
    int64_t align = is_scratchpad(st.scope_) ? kScratchpadAlignment : kDefaultAlignment;
    in.buffer = make_buffer(t.name, t.dtype, shape, st.scope_, align);
    remap_.buffers[t.buffer.get()] = in.buffer;
    if (!in.is_arg && in.parent == kNone) allocs.push_back(in.buffer);
  }
  std::vector<PrimParam> params;
  for (const auto& a : args_) {
    auto it = remap_.buffers.find(a->buffer.get());
    if (it == remap_.buffers.end())
      throw Error("lower @" + name_ + ": argument " + a->name + " is not computed by this schedule");
    params.push_back(buffer_param(it->second));
  }
  std::vector<Stmt> nests;
  for (size_t i = 0; i < info_.size(); ++i)
    if (info_[i].computed && info_[i].parent == kNone) nests.push_back(nest(i));
  nests.push_back(return_stmt(int_imm(0)));
  Stmt body = seq(nests);
  for (size_t k = allocs.size(); k-- > 0;) body = allocate(allocs[k], body);
  PrimFunc f = make_prim_func(name_, params, body);
  verify_prim_func(*f);
  return f;
}

tir::PrimFunc lower(const Schedule& s, const std::vector<Tensor>& args, const std::string& name) {
  return Lowering(s, args, name).run();
}

}  // namespace kiln::tir::te
