// The op registry: one entry per op, holding everything kiln knows about it.
//
// An OpDef names the op, declares its attribute schema (kinds and defaults),
// infers output types from input types, and carries the reference kernel that
// the interpreter (and the VM's host fallback) runs. Ops are added by the
// explicit register_*_ops() calls in registry.cc, never by static initialisers.
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
struct TensorDesc {
  Shape shape;
  DType dtype = DType::Float32;
  bool operator==(const TensorDesc& o) const { return shape == o.shape && dtype == o.dtype; }
};
std::string desc_str(const TensorDesc& d);  // "Tensor[(2, 4), float32]"

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

struct OpDef {
  std::string name;     // "nn.conv2d"
  std::string summary;  // one line for `kiln ops` and docs
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  std::vector<AttrSpec> attrs;
  bool tuple_output = false;  // result is a tuple even with one field (split)
  InferFn infer = nullptr;
  KernelFn kernel = nullptr;
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

void register_elementwise_ops(OpRegistry& r);  // elementwise.cc: binary, unary, clip, astype
void register_logic_ops(OpRegistry& r);        // logic.cc: comparisons, logical and/or/xor/not
void register_reduce_ops(OpRegistry& r);       // reduce.cc: sum, mean, prod, softmax, argmax, cumsum
void register_sort_ops(OpRegistry& r);         // sort.cc: topk
void register_shape_ops(OpRegistry& r);        // shape.cc: reshape, permute_dims, concat, split, ...
void register_nn_ops(
    OpRegistry& r);  // nn.cc: conv2d, conv2d_transpose, dense, matmul, pools, batch_norm, pad
void register_image_ops(OpRegistry& r);        // image.cc: image.resize2d
void register_quant_ops(OpRegistry& r);        // quant.cc: quantize, dequantize
void register_recurrent_ops(OpRegistry& r);    // nn_recurrent.cc: nn.rnn, nn.gru, nn.lstm
void register_einsum_ops(OpRegistry& r);       // einsum.cc: einsum
void register_grid_sample_ops(OpRegistry& r);  // grid_sample.cc: image.grid_sample
void register_loss_ops(OpRegistry& r);         // loss.cc: nn.nll_loss
void register_bitwise_ops(OpRegistry& r);      // bitwise.cc: bitshift

}  // namespace kiln
