// Tensor expressions: placeholders, computes, reductions.
#include <algorithm>

#include "ir/stable_sort.h"
#include "tir/mutator.h"
#include "tir/te/te.h"

namespace kiln::tir::te {
namespace {

// The inputs of the compute being built: loads through Tensor::operator()
// record their tensor here while compute() runs fcompute.
thread_local std::vector<Tensor>* current_inputs = nullptr;

struct CollectInputs {
  std::vector<Tensor> inputs;
  std::vector<Tensor>* saved;
  CollectInputs() : saved(current_inputs) { current_inputs = &inputs; }
  ~CollectInputs() { current_inputs = saved; }
};

// Buffers in the order the expression reads them, left to right.
class LoadOrder : public Visitor {
 public:
  std::vector<const BufferNode*> order;

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    if (std::find(order.begin(), order.end(), n.buffer.get()) == order.end()) order.push_back(n.buffer.get());
    Visitor::visit_BufferLoad(n);
  }
};

void check_shape(const std::vector<int64_t>& shape, const std::string& name) {
  if (name.empty()) throw Error("a tensor needs a name");
  for (int64_t d : shape)
    if (d <= 0)
      throw Error("tensor " + name + ": every dimension must be positive, got " + std::to_string(d));
}

std::shared_ptr<TensorNode> new_tensor(const std::vector<int64_t>& shape, DataType dtype,
                                       const std::string& name) {
  check_shape(shape, name);
  auto t = std::make_shared<TensorNode>();
  t->name = name;
  t->dtype = dtype;
  t->shape = shape;
  std::vector<Expr> extents;
  for (int64_t d : shape) extents.push_back(int_imm(d));
  t->buffer = make_buffer(name, dtype, extents);
  return t;
}

Axes make_axes(size_t n) {
  Axes axes;
  for (size_t i = 0; i < n; ++i) axes.push_back(make_var("i" + std::to_string(i)));
  return axes;
}

}  // namespace

IterVar reduce_axis(int64_t extent, const std::string& name) {
  if (extent <= 0)
    throw Error("reduce axis " + name + ": the extent must be positive, got " + std::to_string(extent));
  return IterVar{make_var(name), extent};
}

Reduction sum(Expr value, std::vector<IterVar> axes) {
  return Reduction{ReduceKind::Sum, std::move(value), std::move(axes)};
}
Reduction max(Expr value, std::vector<IterVar> axes) {
  return Reduction{ReduceKind::Max, std::move(value), std::move(axes)};
}
Reduction nan_max(Expr value, std::vector<IterVar> axes) {
  return Reduction{ReduceKind::NanMax, std::move(value), std::move(axes)};
}
Reduction prod(Expr value, std::vector<IterVar> axes) {
  return Reduction{ReduceKind::Prod, std::move(value), std::move(axes)};
}

Expr TensorNode::operator()(const std::vector<Expr>& indices) const {
  if (indices.size() != shape.size())
    throw Error("tensor " + name + " has " + std::to_string(shape.size()) +
                " dimensions but is indexed with " + std::to_string(indices.size()));
  if (current_inputs) {
    bool seen = false;
    for (const auto& t : *current_inputs) seen = seen || t.get() == this;
    if (!seen) current_inputs->push_back(shared_from_this());
  }
  return load(buffer, indices);
}

Expr TensorNode::operator()(const Axes& indices) const {
  return (*this)(std::vector<Expr>(indices.begin(), indices.end()));
}

Expr TensorNode::operator()(std::initializer_list<Expr> indices) const {
  return (*this)(std::vector<Expr>(indices));
}

Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name) {
  return new_tensor(shape, dtype, name);
}

Tensor compute(std::vector<int64_t> shape, const std::function<Expr(const Axes&)>& fcompute,
               std::string name) {
  return compute(
      shape,
      [&](const Axes& i) {
        return Reduction{ReduceKind::None, fcompute(i), {}};
      },
      name);
}

Tensor compute(std::vector<int64_t> shape, const std::function<Reduction(const Axes&)>& fcompute,
               std::string name) {
  check_shape(shape, name);
  Axes axes = make_axes(shape.size());
  CollectInputs collect;
  Reduction r = fcompute(axes);
  if (!r.value) throw Error("tensor " + name + ": the compute function returned no expression");
  auto t = new_tensor(shape, r.value->dtype, name);
  t->axes = axes;
  t->body = r.value;
  t->reduction = r;
  // Inputs in reading order, not in the (unspecified) order C++ evaluated
  // the loads, so stages and lowered statements come out deterministic.
  LoadOrder reads;
  reads.visit(r.value);
  auto rank = [&](const Tensor& x) {
    return std::find(reads.order.begin(), reads.order.end(), x->buffer.get()) - reads.order.begin();
  };
  t->inputs = collect.inputs;
  kiln::stable_sort(t->inputs, [&](const Tensor& x, const Tensor& y) { return rank(x) < rank(y); });
  return t;
}

Tensor extern_compute(std::vector<int64_t> shape, DataType dtype, std::vector<Tensor> inputs, ExternBody body,
                      std::string name) {
  if (!body) throw Error("tensor " + name + ": an extern tensor needs a statement");
  auto t = new_tensor(shape, dtype, name);
  t->inputs = std::move(inputs);
  t->extern_body = std::move(body);
  return t;
}

}  // namespace kiln::tir::te
