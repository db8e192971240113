// The op registry: one entry per op, holding everything kiln knows about it.
//
// An OpDef names the op, declares its attribute schema (kinds and defaults),
// infers output types from input types, and carries the reference kernel that
// the interpreter (and the VM's host fallback) runs. Ops are added by the
// explicit register_*_ops() calls in registry.cc (declared in
// op/register_ops.h), never by static initialisers.
//
// This folder is linked into kiln_runtime: it depends on tensors and attrs
// only, never on the IR or LLVM.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// The static type of one tensor value: what inference works on.
//
// The leading axis may be bounded dynamic (bounded_outer): shape[0] is then
// an upper bound, and at run time the tensor's extent along axis 0 is any
// n <= shape[0], known only once the op producing it has run (the selected
// boxes of image.non_max_suppression). A row-major tensor trimmed on axis 0
// is a prefix of its storage (Tensor::slice_outer), so storage sized for the
// bound holds it. Run-time descs (of actual tensors) are never dynamic.
struct TensorDesc {
  Shape shape;
  DType dtype = DType::Float32;
  bool bounded_outer = false;  // shape[0] is an upper bound (rank >= 1)
  bool operator==(const TensorDesc& o) const {
    return shape == o.shape && dtype == o.dtype && bounded_outer == o.bounded_outer;
  }
};
std::string desc_str(const TensorDesc& d);  // "Tensor[(2, 4), float32]", "Tensor[(<=300, 3), int64]"
// Whether any of `descs` has a bounded dynamic leading axis.
bool any_bounded(const std::vector<TensorDesc>& descs);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  // Absent: the attribute is required.
  std::optional<AttrValue> default_value;
};

// Inference: validates attribute values and input types, returns the output
// types (one per output). Throws kiln::Error with a message naming the op, the
// input or attribute at fault, and what was expected.
using InferFn = std::vector<TensorDesc> (*)(const std::vector<TensorDesc>& inputs, const Attrs& attrs);
// Reference kernel: reads inputs, writes the pre-allocated outputs (shapes and
// dtypes as inferred). attrs are normalised (defaults filled in).
using KernelFn = void (*)(const std::vector<Tensor>& inputs, const Attrs& attrs,
                          std::vector<Tensor>& outputs);

// How an op's inference treats inputs with a bounded dynamic leading axis
// (TensorDesc::bounded_outer). infer_op refuses them for an op that has not
// declared it accepts them, naming the op and the input.
enum class DynamicInputs : uint8_t {
  Reject,  // no input may be dynamic (most ops)
  Follow,  // elementwise: one dynamic input, the others broadcast along the
           // leading axis; every output of that rank keeps its dynamic axis
  Custom,  // the op's infer decides, and sets bounded_outer on its outputs
};

struct OpDef {
  std::string name;     // "nn.conv2d"
  std::string summary;  // one line for `kiln ops` and docs
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  std::vector<AttrSpec> attrs;
  bool tuple_output = false;  // result is a tuple even with one field (split)
  InferFn infer = nullptr;
  // A kernel of an op whose output is dynamic writes the output allocated at
  // the bound and replaces it with outputs[i].slice_outer(0, n).
  KernelFn kernel = nullptr;
  DynamicInputs dynamic_inputs = DynamicInputs::Reject;
};

// Looks an op up by exact name; nullptr when unknown.
const OpDef* find_op(std::string_view name);
// All registered ops, in registration order.
const std::vector<const OpDef*>& all_ops();

// Checks `given` against the op's schema (no unknown names, right kinds,
// required present) and returns it with defaults filled in. Throws kiln::Error.
Attrs normalize_attrs(const OpDef& op, const Attrs& given);

// normalize_attrs, then the input count and op->infer.
std::vector<TensorDesc> infer_op(const OpDef& op, const std::vector<TensorDesc>& inputs, const Attrs& attrs);

// Allocates outputs from inference and runs the reference kernel.
std::vector<Tensor> run_op(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

// Registration, called once from the registry in this order.
class OpRegistry {
 public:
  void add(OpDef def);  // a second add of one name is an internal error
  const OpDef* find(std::string_view name) const;
  const std::vector<const OpDef*>& ops() const { return order_; }

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
  std::vector<const OpDef*> order_;
};

}  // namespace kiln
