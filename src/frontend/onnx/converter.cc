// GraphBuilder (binding and constant folding) and NodeContext (inputs and
// attributes of one ONNX node).
#include "frontend/onnx/converter.h"

#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {

std::string sanitize_name(const std::string& onnx_name) {
  std::string s;
  for (char c : onnx_name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v" + s;
  return s;
}

std::string GraphBuilder::unique_name(const std::string& base) {
  std::string name = sanitize_name(base);
  if (used_names_.insert(name).second) return name;
  for (int i = 1;; ++i) {
    std::string candidate = name + "_" + std::to_string(i);
    if (used_names_.insert(candidate).second) return candidate;
  }
}

Expr GraphBuilder::bind(Expr value) {
  Var v = make_var(unique_name(hint_), value->type);
  bindings_.push_back({v, std::move(value)});
  return v;
}

Expr GraphBuilder::call(std::string_view op_name, std::vector<Expr> args, const Attrs& attrs) {
  const OpDef* op = find_op(op_name);
  KILN_ASSERT(op != nullptr, "ONNX converter uses an unregistered op " + std::string(op_name));
  Expr call = make_op_call(*op, args, attrs);
  bool all_constant = true;
  for (const auto& a : args) all_constant = all_constant && as<ConstantNode>(a) != nullptr;
  if (!all_constant) return bind(std::move(call));
  // Fold: the same reference kernel the interpreter would run, now.
  std::vector<Tensor> values;
  for (const auto& a : args) values.push_back(as<ConstantNode>(a)->value);
  std::vector<Tensor> outs = run_op(*op, values, attrs);
  if (call->type->is_tensor()) return make_constant(outs[0]);
  std::vector<Expr> fields;
  for (auto& t : outs) fields.push_back(make_constant(t));
  return make_tuple(std::move(fields));  // unbound: tuple_item takes its fields apart
}

Expr GraphBuilder::tuple_item(const Expr& tuple, int64_t index) {
  if (const auto* t = as<TupleNode>(tuple)) {
    KILN_ASSERT(index >= 0 && index < static_cast<int64_t>(t->fields.size()), "tuple index out of range");
    return t->fields[static_cast<size_t>(index)];
  }
  return bind(make_tuple_get_item(tuple, index));
}

// ---------------------------------------------------------------- NodeContext

bool NodeContext::has_input(size_t i) const {
  return i < num_inputs() && !node_.input(static_cast<int>(i)).empty();
}

Expr NodeContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  const std::string& name = node_.input(static_cast<int>(i));
  auto it = values_.find(name);
  if (it == values_.end())
    fail("input " + std::to_string(i) + " '" + name +
         "' is not defined by any earlier node, initializer or graph input (nodes must be in topological "
         "order)");
  if (!it->second->type->is_tensor()) fail("input '" + name + "' is not a tensor");
  return it->second;
}

const TensorDesc& NodeContext::desc(size_t i) const { return input(i)->type->tensor; }

std::optional<Tensor> NodeContext::constant(size_t i) const {
  if (const auto* c = as<ConstantNode>(input(i))) return c->value;
  return std::nullopt;
}

Tensor NodeContext::require_constant(size_t i, const std::string& what) const {
  auto t = constant(i);
  if (t) return *t;
  // Every call on constants folds and every input shape is bound by now, so
  // a value that is not constant depends on the values of graph inputs.
  const std::string& name = node_.input(static_cast<int>(i));
  std::string head =
      "input " + std::to_string(i) + " (" + what + ") must be a constant: kiln compiles static shapes";
  if (g_.is_graph_input(name))
    unsupported(head + ", but it is the graph input '" + name +
                "', whose values are known only at run time; make '" + name +
                "' a constant of the model (an initializer), give its value at import with --input-value " +
                name +
                "=V0,V1,... (or =FILE.npy), or compute it from input shapes (Shape) and bind those with "
                "--input-shape");
  unsupported(
      head + ", but '" + name +
      "' is computed from the values of graph inputs at run time; make it a constant of the model, or "
      "compute it from input shapes (Shape) and bind those with --input-shape");
}

std::vector<int64_t> NodeContext::require_ints(size_t i, const std::string& what) const {
  Tensor t = require_constant(i, what);
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    fail("input " + std::to_string(i) + " (" + what + ") must be int64, got " +
         std::string(dtype_name(t.dtype())));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k)
    v[static_cast<size_t>(k)] = static_cast<int64_t>(t.get_as_double(k));
  if (t.dtype() == DType::Int64)
    for (int64_t k = 0; k < t.numel(); ++k) v[static_cast<size_t>(k)] = t.data<int64_t>()[k];
  return v;
}

const onnx::AttributeProto* NodeContext::find_attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

static const char* attr_type_name(int t) {
  return onnx::AttributeProto_AttributeType_IsValid(t)
             ? onnx::AttributeProto_AttributeType_Name(static_cast<onnx::AttributeProto_AttributeType>(t))
                   .c_str()
             : "?";
}

#define KILN_ATTR_EXPECT(a, T)                               \
  if ((a)->type() != onnx::AttributeProto_AttributeType_##T) \
  fail("attribute '" + (a)->name() + "' must be " #T ", got " + attr_type_name((a)->type()))

int64_t NodeContext::attr_int(const std::string& name, int64_t def) const {
  const auto* a = find_attr(name);
  if (!a) return def;
  KILN_ATTR_EXPECT(a, INT);
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double def) const {
  const auto* a = find_attr(name);
  if (!a) return def;
  KILN_ATTR_EXPECT(a, FLOAT);
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = find_attr(name);
  if (!a) return def;
  KILN_ATTR_EXPECT(a, STRING);
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, const std::vector<int64_t>& def) const {
  const auto* a = find_attr(name);
  if (!a) return def;
  KILN_ATTR_EXPECT(a, INTS);
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeContext::attr_floats(const std::string& name, const std::vector<double>& def) const {
  const auto* a = find_attr(name);
  if (!a) return def;
  KILN_ATTR_EXPECT(a, FLOATS);
  return {a->floats().begin(), a->floats().end()};
}

std::optional<Tensor> NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(name);
  if (!a) return std::nullopt;
  KILN_ATTR_EXPECT(a, TENSOR);
  try {
    return tensor_from_proto(a->t(), base_dir_);
  } catch (const UnsupportedError&) {
    throw;
  } catch (const Error& e) {
    fail("attribute '" + name + "': " + e.message());
  }
}
#undef KILN_ATTR_EXPECT

Expr NodeContext::scalar(double v, DType dtype) {
  Tensor t = Tensor::zeros({}, dtype);
  t.set_from_double(0, v);
  return make_constant(t);
}

void NodeContext::set_output(size_t i, Expr e) {
  if (!has_output(i)) return;  // an optional output nobody reads
  values_[node_.output(static_cast<int>(i))] = std::move(e);
}

void NodeContext::fail(const std::string& msg) const { throw Error(msg); }
void NodeContext::unsupported(const std::string& msg) const { throw UnsupportedError(msg); }

// ---------------------------------------------------------------- shared helpers

int64_t normalize_axis(int64_t axis, int64_t rank, const NodeContext& n) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

Tensor ints_tensor(const std::vector<int64_t>& v) {
  return Tensor::from_ints({static_cast<int64_t>(v.size())}, v);
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string converter_key(const onnx::NodeProto& node) {
  return is_default_domain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
}

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    add_elementwise_converters(t);
    add_logic_converters(t);
    add_conv_converters(t);
    add_nn_converters(t);
    add_shape_converters(t);
    add_reduce_converters(t);
    add_recurrent_converters(t);
    add_einsum_converters(t);
    add_loss_converters(t);
    add_sampling_converters(t);
    add_quant_converters(t);
    add_training_converters(t);
    add_signal_converters(t);
    add_linalg_converters(t);
    add_nms_converters(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::onnx_import
