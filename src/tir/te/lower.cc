// lower(schedule, args, name): a schedule becomes a prim function.
//
// Each stage (producers first) becomes one loop nest writing its buffer; a
// reduction gets a nest that writes the initial value first. Arguments become
// buffer parameters; every other stage's buffer is allocated, in its scope,
// around the whole body, so the scratchpad lowering sees one allocate per
// buffer. Inlined stages have no nest: loads of them are replaced by their
// expression at the load's indices.
#include <limits>

#include "tir/mutator.h"
#include "tir/te/te.h"

namespace kiln::tir::te {
namespace {

// HVX vectors are 128 bytes; scratchpad buffers are aligned to them.
constexpr int64_t kScratchpadAlignment = 128;

class LowerRefs : public Mutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> buffers;
  std::unordered_map<const BufferNode*, const TensorNode*> inlined;
  std::unordered_map<const BufferNode*, Expr> inlined_body;

 protected:
  Buffer mutate_buffer_ref(const Buffer& b) override {
    auto it = buffers.find(b.get());
    return it == buffers.end() ? b : it->second;
  }
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    auto it = inlined.find(n.buffer.get());
    if (it == inlined.end()) return Mutator::mutate_BufferLoad(e, n);
    std::unordered_map<const VarNode*, Expr> at;
    for (size_t k = 0; k < n.indices.size(); ++k) at[it->second->axes[k].get()] = mutate(n.indices[k]);
    return mutate(substitute(inlined_body.at(n.buffer.get()), at));
  }
};

Expr reduce_init(ReduceKind kind, DataType t) {
  if (kind == ReduceKind::Sum) return t.is_float() ? float_imm(0.0, t) : int_imm(0, t);
  if (t.is_float()) return float_imm(-std::numeric_limits<double>::infinity(), t);
  if (t.is_uint()) return int_imm(0, t);
  return int_imm(t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits - 1)), t);
}

bool contains(const std::vector<Tensor>& v, const Tensor& t) {
  for (const auto& x : v)
    if (x == t) return true;
  return false;
}

}  // namespace

tir::PrimFunc lower(const Schedule& s, const std::vector<Tensor>& args, const std::string& name) {
  LowerRefs refs;
  std::vector<PrimParam> params;
  std::vector<Buffer> allocs;
  for (const auto& st : s.stages()) {
    const TensorNode& t = *st->tensor_;
    bool is_arg = contains(args, st->tensor_);
    if (t.is_placeholder() && !is_arg)
      throw Error("lower @" + name + ": placeholder " + t.name +
                  " is not among the arguments; pass it in `args`");
    if (st->inlined_) {
      if (is_arg) throw Error("lower @" + name + ": tensor " + t.name + " is an argument and cannot be inlined");
      refs.inlined[t.buffer.get()] = &t;
      refs.inlined_body[t.buffer.get()] = st->body_;
      continue;
    }
    int64_t align = is_scratchpad(st->scope_) ? kScratchpadAlignment : kDefaultAlignment;
    Buffer b = make_buffer(t.name, t.dtype, t.buffer->shape, st->scope_, align);
    refs.buffers[t.buffer.get()] = b;
    if (!is_arg) allocs.push_back(b);
  }
  for (const auto& a : args) {
    auto it = refs.buffers.find(a->buffer.get());
    if (it == refs.buffers.end())
      throw Error("lower @" + name + ": argument " + a->name + " is not computed by this schedule");
    params.push_back(buffer_param(it->second));
  }

  std::vector<Stmt> nests;
  for (const auto& st : s.stages()) {
    const TensorNode& t = *st->tensor_;
    if (t.is_placeholder() || st->inlined_) continue;
    Buffer out = refs.buffers.at(t.buffer.get());
    std::unordered_map<const VarNode*, Expr> values;
    for (const auto& [axis, value] : st->axis_values_) values[axis.get()] = value;
    std::vector<Expr> indices;
    for (const auto& a : t.axes) indices.push_back(values.at(a.get()));
    Expr value = refs.mutate(substitute(st->body_, values));
    if (st->reduce_kind_ != ReduceKind::None) {
      // The initial value, in its own nest over the tensor's shape.
      std::vector<Var> vars;
      for (const auto& a : t.axes) vars.push_back(make_var(a->name));
      Stmt init = store(out, std::vector<Expr>(vars.begin(), vars.end()),
                        reduce_init(st->reduce_kind_, t.dtype));
      for (size_t k = vars.size(); k-- > 0;)
        init = for_loop(vars[k], int_imm(0), int_imm(t.shape[k]), ForKind::Serial, init);
      nests.push_back(init);
      Expr old = load(out, indices);
      value = st->reduce_kind_ == ReduceKind::Sum ? add(old, value) : tir::max(old, value);
    }
    Stmt body = store(out, indices, value);
    for (size_t k = st->leaves_.size(); k-- > 0;) {
      const Leaf& l = st->leaves_[k];
      body = for_loop(l.var, int_imm(0), int_imm(l.extent), l.kind, body);
    }
    nests.push_back(body);
  }
  nests.push_back(return_stmt(int_imm(0)));
  Stmt body = seq(nests);
  for (size_t k = allocs.size(); k-- > 0;) body = allocate(allocs[k], body);
  PrimFunc f = make_prim_func(name, params, body);
  verify_prim_func(*f);
  return f;
}

}  // namespace kiln::tir::te
