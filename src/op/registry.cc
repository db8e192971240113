// The op registry and the schema checks shared by every op.
#include <memory>

#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {

std::string desc_str(const TensorDesc& d) {
  std::string s = "Tensor[(";
  for (size_t i = 0; i < d.shape.size(); ++i)
    s += (i ? ", " : "") + std::string(i == 0 && d.bounded_outer ? "<=" : "") + std::to_string(d.shape[i]);
  if (d.shape.size() == 1) s += ",";
  return s + "), " + std::string(dtype_name(d.dtype)) + "]";
}

void OpRegistry::add(OpDef def) {
  KILN_ASSERT(find(def.name) == nullptr, "op registered twice: " + def.name);
  KILN_ASSERT(def.infer != nullptr && def.kernel != nullptr, "op without inference or kernel: " + def.name);
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
  order_.push_back(defs_.back().get());
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const OpDef* d : order_)
    if (d->name == name) return d;
  return nullptr;
}

static const OpRegistry& registry() {
  static const OpRegistry r = [] {
    OpRegistry reg;
    register_elementwise_ops(reg);
    register_logic_ops(reg);
    register_reduce_ops(reg);
    register_sort_ops(reg);
    register_shape_ops(reg);
    register_nn_ops(reg);
    register_image_ops(reg);
    register_quant_ops(reg);
    register_recurrent_ops(reg);
    register_einsum_ops(reg);
    register_loss_ops(reg);
    register_grid_sample_ops(reg);
    register_bitwise_ops(reg);
    register_conv3d_ops(reg);
    register_pool3d_ops(reg);
    register_unpool_ops(reg);
    register_roi_align_ops(reg);
    register_nms_ops(reg);
    register_linalg_ops(reg);
    register_signal_ops(reg);
    return reg;
  }();
  return r;
}

const OpDef* find_op(std::string_view name) { return registry().find(name); }
const std::vector<const OpDef*>& all_ops() { return registry().ops(); }

// An empty list reads back as a list of ints; accept it where floats are asked.
static bool coerce(AttrValue& v, AttrKind want) {
  AttrKind have = attr_kind(v);
  if (have == want) return true;
  if (want == AttrKind::Float && have == AttrKind::Int) {
    v = static_cast<double>(std::get<int64_t>(v));
    return true;
  }
  if (want == AttrKind::Floats && have == AttrKind::Ints) {
    const auto& xs = std::get<std::vector<int64_t>>(v);
    v = std::vector<double>(xs.begin(), xs.end());
    return true;
  }
  return false;
}

Attrs normalize_attrs(const OpDef& op, const Attrs& given) {
  Attrs out;
  for (const auto& [name, value] : given.items()) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : op.attrs)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : op.attrs) known += (known.empty() ? "" : ", ") + s.name;
      throw Error(op.name + ": unknown attribute '" + name + "'" +
                  (known.empty() ? " (the op takes no attributes)" : " (known: " + known + ")"));
    }
    AttrValue v = value;
    if (!coerce(v, spec->kind))
      throw Error(op.name + ": attribute '" + name + "' must be a " + attr_kind_name(spec->kind) + ", got " +
                  attr_value_str(value));
    out.set(name, std::move(v));
  }
  for (const auto& s : op.attrs) {
    if (out.has(s.name)) continue;
    if (!s.default_value) throw Error(op.name + ": missing required attribute '" + s.name + "'");
    out.set(s.name, *s.default_value);
  }
  return out;
}

bool any_bounded(const std::vector<TensorDesc>& descs) {
  for (const auto& d : descs)
    if (d.bounded_outer) return true;
  return false;
}

namespace {

std::string input_label(size_t i, const TensorDesc& d) {
  return "input " + std::to_string(i) + " " + desc_str(d);
}

// DynamicInputs::Reject: the first dynamic input is an error.
void reject_dynamic(const OpDef& op, const std::vector<TensorDesc>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].bounded_outer) continue;
    throw Error(op.name + ": " + input_label(i, inputs[i]) +
                " has a bounded dynamic leading axis (its extent is known only at run time), which " +
                op.name +
                " does not accept; `kiln ops` marks the ops that do [dynamic] (docs/onnx.md, \"Bounded "
                "dynamic dimensions\"): compute it from the dynamic value with those, or use this op "
                "before the op that makes the value dynamic");
  }
}

// DynamicInputs::Follow: elementwise outputs keep the one dynamic input's
// leading axis; every other input must broadcast along it, since the actual
// extent is known only at run time.
void follow_dynamic(const OpDef& op, const std::vector<TensorDesc>& inputs, std::vector<TensorDesc>& outs) {
  int dynamic = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].bounded_outer) continue;
    if (dynamic >= 0)
      throw Error(op.name + ": inputs " + std::to_string(dynamic) + " and " + std::to_string(i) +
                  " both have a bounded dynamic leading axis, whose extents may differ at run time; kiln "
                  "accepts one dynamic input per elementwise op");
    dynamic = static_cast<int>(i);
  }
  if (dynamic < 0) return;
  const TensorDesc& d = inputs[static_cast<size_t>(dynamic)];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i].shape;
    if (static_cast<int>(i) == dynamic || s.size() < d.shape.size() || s[0] == 1) continue;
    throw Error(op.name + ": " + input_label(i, inputs[i]) +
                " must broadcast along the bounded dynamic leading axis of " +
                input_label(static_cast<size_t>(dynamic), d) + " (extent 1 there, or a lower rank)");
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    if (outs[o].shape.size() != d.shape.size() || outs[o].shape[0] != d.shape[0])
      throw Error(op.name + ": result " + std::to_string(o) + " " + desc_str(outs[o]) +
                  " would not keep the bounded dynamic leading axis of " +
                  input_label(static_cast<size_t>(dynamic), d));
    outs[o].bounded_outer = true;
  }
}

}  // namespace

std::vector<TensorDesc> infer_op(const OpDef& op, const std::vector<TensorDesc>& inputs, const Attrs& attrs) {
  int n = static_cast<int>(inputs.size());
  if (n < op.min_inputs || (op.max_inputs >= 0 && n > op.max_inputs)) {
    std::string want = op.min_inputs == op.max_inputs ? std::to_string(op.min_inputs)
                       : op.max_inputs < 0
                           ? "at least " + std::to_string(op.min_inputs)
                           : std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs);
    throw Error(op.name + " takes " + want + " input(s), got " + std::to_string(n));
  }
  if (op.dynamic_inputs == DynamicInputs::Reject) reject_dynamic(op, inputs);
  std::vector<TensorDesc> out = op.infer(inputs, normalize_attrs(op, attrs));
  if (op.dynamic_inputs == DynamicInputs::Follow) follow_dynamic(op, inputs, out);
  // A result no kernel could index (a huge dimension, even of an empty
  // tensor) is an error here, before a printed module could not be read back.
  for (size_t i = 0; i < out.size(); ++i) {
    Shape known = out[i].shape;
    for (int64_t& d : known)
      if (d < 0) d = 1;  // a symbolic dimension (-1): checked once bound
    check_shape_extent(known, op.name + ": result " + std::to_string(i));
    KILN_ASSERT(!out[i].bounded_outer || !out[i].shape.empty(), op.name + ": a dynamic result of rank 0");
  }
  return out;
}

std::vector<Tensor> run_op(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  std::vector<TensorDesc> in;
  for (const auto& t : inputs) in.push_back({t.shape(), t.dtype()});
  Attrs norm = normalize_attrs(op, attrs);
  std::vector<TensorDesc> out_desc = infer_op(op, in, norm);
  std::vector<Tensor> outs;
  for (const auto& d : out_desc) outs.push_back(Tensor::empty(d.shape, d.dtype));
  op.kernel(inputs, norm, outs);
  return outs;
}

}  // namespace kiln
