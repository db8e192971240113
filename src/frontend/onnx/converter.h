// What an ONNX op converter sees: one node, its inputs as kiln expressions,
// typed attribute getters, and a builder that emits kiln op calls.
//
// Internal to src/frontend/onnx. Each family file (convert_*.cc) adds its
// converters to the table; importer.cc walks the graph.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/onnx/importer.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"

namespace kiln::onnx_import {

// Collects the bindings of @main. Every op call goes through call(): when all
// arguments are constants the op runs right away and the result is a
// constant (this is what folds shape computations); otherwise the call is
// bound to a fresh variable named after the ONNX value it computes.
class GraphBuilder {
 public:
  Expr call(std::string_view op, std::vector<Expr> args, const Attrs& attrs = {});
  Expr tuple_item(const Expr& tuple, int64_t index);
  // Base name for the variables bound next (the ONNX output name).
  void set_name_hint(const std::string& hint) { hint_ = hint; }
  std::string unique_name(const std::string& base);

  std::vector<Binding>& bindings() { return bindings_; }

  // The graph inputs that are parameters of @main (by ONNX name): their
  // values are known only at run time.
  void add_graph_input(const std::string& onnx_name) { graph_inputs_.insert(onnx_name); }
  bool is_graph_input(const std::string& onnx_name) const { return graph_inputs_.count(onnx_name) != 0; }

 private:
  Expr bind(Expr value);
  std::vector<Binding> bindings_;
  std::set<std::string> used_names_;
  std::set<std::string> graph_inputs_;
  std::string hint_ = "v";
};

// A variable-friendly name: [A-Za-z0-9_], not starting with a digit.
std::string sanitize_name(const std::string& onnx_name);

class NodeContext {
 public:
  NodeContext(const onnx::NodeProto& node, int64_t opset, GraphBuilder& g,
              std::map<std::string, Expr>& values, const std::string& base_dir)
      : node_(node), opset_(opset), g_(g), values_(values), base_dir_(base_dir) {}

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  GraphBuilder& builder() { return g_; }

  // Inputs. An input is absent when its index is past the end or its name is
  // empty (ONNX's way to skip an optional input).
  size_t num_inputs() const { return static_cast<size_t>(node_.input_size()); }
  bool has_input(size_t i) const;
  Expr input(size_t i) const;
  const TensorDesc& desc(size_t i) const;
  int64_t rank(size_t i) const { return static_cast<int64_t>(desc(i).shape.size()); }
  // The input's value when it is a constant (an initializer, a Constant node
  // or a folded computation); nullopt otherwise.
  std::optional<Tensor> constant(size_t i) const;
  // The same, as an error when it is not constant (`what` names the input):
  // the error says whether the value is a graph input or computed from one.
  Tensor require_constant(size_t i, const std::string& what) const;
  std::vector<int64_t> require_ints(size_t i, const std::string& what) const;

  // Attributes.
  bool has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& def = {}) const;
  std::vector<double> attr_floats(const std::string& name, const std::vector<double>& def = {}) const;
  std::optional<Tensor> attr_tensor(const std::string& name) const;
  const onnx::AttributeProto* find_attr(const std::string& name) const;

  Expr call(std::string_view op, std::vector<Expr> args, const Attrs& attrs = {}) {
    return g_.call(op, std::move(args), attrs);
  }
  Expr constant_expr(Tensor t) { return make_constant(std::move(t)); }
  Expr scalar(double v, DType dtype);

  void set_output(size_t i, Expr e);
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  bool has_output(size_t i) const { return i < num_outputs() && !node_.output(static_cast<int>(i)).empty(); }

  // An error about this node (the importer adds the node's name and op).
  [[noreturn]] void fail(const std::string& msg) const;
  [[noreturn]] void unsupported(const std::string& msg) const;

 private:
  const onnx::NodeProto& node_;
  int64_t opset_;
  GraphBuilder& g_;
  std::map<std::string, Expr>& values_;
  const std::string& base_dir_;
};

using ConvertFn = void (*)(NodeContext& n);

struct Converter {
  ConvertFn fn = nullptr;
  // kiln ops the converter emits; when one is not registered the ONNX op is
  // reported as unsupported instead of failing mid-import.
  std::vector<std::string> needs;
  int64_t min_opset = 1;
};

// Keyed by converter_key: the op type, prefixed with the domain for
// operators outside the default domain ("ai.onnx.preview.training.Adam").
using ConverterTable = std::map<std::string, Converter>;

// The domain of ONNX's training operators (Adagrad, Adam, Momentum).
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";
bool is_default_domain(const std::string& domain);
std::string converter_key(const onnx::NodeProto& node);

const ConverterTable& converters();
void add_elementwise_converters(ConverterTable& t);
void add_logic_converters(ConverterTable& t);
void add_conv_converters(ConverterTable& t);
void add_nn_converters(ConverterTable& t);
void add_shape_converters(ConverterTable& t);
void add_reduce_converters(ConverterTable& t);
void add_recurrent_converters(ConverterTable& t);
void add_einsum_converters(ConverterTable& t);
void add_loss_converters(ConverterTable& t);
void add_sampling_converters(ConverterTable& t);
void add_quant_converters(ConverterTable& t);
void add_training_converters(ConverterTable& t);
void add_signal_converters(ConverterTable& t);
void add_linalg_converters(ConverterTable& t);
void add_nms_converters(ConverterTable& t);

// Helpers shared by the families.
int64_t normalize_axis(int64_t axis, int64_t rank, const NodeContext& n);
Tensor ints_tensor(const std::vector<int64_t>& v);
// nn.conv2d of x (input 0's layout, rank 3 or 4) and w under node n's ONNX
// Conv attributes (strides, dilations, pads/auto_pad, group), without a bias;
// the result has x's rank. convert_conv.cc.
Expr conv_from_node_attrs(NodeContext& n, Expr x, Expr w);

}  // namespace kiln::onnx_import
