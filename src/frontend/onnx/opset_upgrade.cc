// Opset conversion with libonnx's version converter, and the one repair its
// input needs first.
//
// Opsets 1-6 broadcast a binary op's B onto A from `axis`: B (C,) with
// axis 1 on A (N, C, H, W) means (C, 1, 1). libonnx's adapter to opset 7
// (BroadcastForwardCompatibility, 1.12) unsqueezes B by rank(A) - rank(B)
// trailing ones, to (C, 1, 1, 1) here, which is right only for axis 0; it
// then rejects its own result. So B is unsqueezed here first, to rank(A) -
// axis dimensions, after which the adapter has nothing to reshape:
//
//   Add(a: (2, 3, 4), b: (3,), broadcast=1, axis=1)
//   =>  b1 = Unsqueeze(b, axes=[1]): (3, 1);  Add(a, b1, broadcast=1, axis=1)
//
// The converter reads ranks from value_info, so ONNX's shape inference runs
// before it; it reads the graph unchecked, so the importer runs ONNX's
// checker first and the graph outputs are checked here.
#include "frontend/onnx/opset_upgrade.h"

#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

namespace kiln::onnx_import {
namespace {

bool is_legacy_broadcast_op(const std::string& op) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                            "Or",  "Xor", "Equal", "Greater", "Less"};
  return ops.count(op) != 0;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Tensor types by value name, from everything the graph declares.
std::map<std::string, onnx::TypeProto_Tensor> declared_types(const onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto_Tensor> types;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& v : *list)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        types[v.name()] = v.type().tensor_type();
  for (const auto& init : g.initializer()) {
    onnx::TypeProto_Tensor t;
    t.set_elem_type(init.data_type());
    for (int64_t d : init.dims()) t.mutable_shape()->add_dim()->set_dim_value(d);
    types[init.name()] = t;
  }
  return types;
}

void unsqueeze_legacy_broadcast_operands(onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto_Tensor> types = declared_types(g);
  std::set<std::string> names;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.insert(o);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& node : g.node()) {
    const onnx::AttributeProto* broadcast = find_attr(node, "broadcast");
    const onnx::AttributeProto* axis = find_attr(node, "axis");
    bool candidate = is_legacy_broadcast_op(node.op_type()) && broadcast && broadcast->i() != 0 && axis &&
                     node.input_size() == 2 && types.count(node.input(0)) && types.count(node.input(1));
    if (!candidate) {
      *nodes.Add() = node;
      continue;
    }
    const onnx::TypeProto_Tensor& a = types[node.input(0)];
    onnx::TypeProto_Tensor b = types[node.input(1)];
    int64_t rank_a = a.shape().dim_size(), rank_b = b.shape().dim_size();
    int64_t start = axis->i() < 0 ? axis->i() + rank_a : axis->i();
    if (start < 0 || start + rank_b >= rank_a) {
      *nodes.Add() = node;
      continue;
    }
    std::string name = node.input(1) + "_broadcast_axis";
    while (names.count(name) || types.count(name)) name += "_";
    names.insert(name);
    onnx::NodeProto* unsqueeze = nodes.Add();
    unsqueeze->set_op_type("Unsqueeze");
    unsqueeze->add_input(node.input(1));
    unsqueeze->add_output(name);
    auto* axes = unsqueeze->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t i = rank_b; i < rank_a - start; ++i) {
      axes->add_ints(i);
      b.mutable_shape()->add_dim()->set_dim_value(1);
    }
    auto* info = g.add_value_info();
    info->set_name(name);
    *info->mutable_type()->mutable_tensor_type() = b;
    types[name] = b;
    onnx::NodeProto* rewritten = nodes.Add();
    *rewritten = node;
    rewritten->set_input(1, name);
  }
  *g.mutable_node() = std::move(nodes);
}

// ONNX's checker (run before) leaves this to the importer, but libonnx's
// converter dereferences the producer of every graph output unchecked.
void check_outputs_defined(const onnx::GraphProto& g, const std::string& what) {
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  for (const auto& out : g.output())
    if (!defined.count(out.name()))
      throw Error(what + ": graph output '" + out.name() + "' is not computed by any node");
}

// libonnx's shape inference divides by each stride of a convolution or
// pool, by a group count and a block size (and trusts kernel sizes and
// dilations): a 0 there is a division by zero inside libonnx, so these
// attributes are checked first, in subgraphs too. ONNX requires all of them
// to be >= 1.
void check_window_attributes(const onnx::GraphProto& g, const std::string& what) {
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      const std::string& name = a.name();
      if (name == "strides" || name == "dilations" || name == "kernel_shape" || name == "blocksize" ||
          name == "group") {
        std::vector<int64_t> values(a.ints().begin(), a.ints().end());
        if (a.type() == onnx::AttributeProto_AttributeType_INT) values.push_back(a.i());
        for (int64_t v : values)
          if (v < 1)
            throw Error(what + ": " + n.op_type() + " node '" + n.name() + "' has " + a.name() + " " +
                        std::to_string(v) + "; every value must be 1 or more");
      }
      if (a.has_g()) check_window_attributes(a.g(), what);
      for (const auto& sub : a.graphs()) check_window_attributes(sub, what);
    }
}

}  // namespace

int64_t newest_known_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it == ranges.end() ? 0 : it->second.second;
}

onnx::ModelProto convert_opset(const onnx::ModelProto& model, int64_t opset, int64_t target,
                               const std::string& what) {
  check_outputs_defined(model.graph(), what);
  check_window_attributes(model.graph(), what);
  onnx::ModelProto input = model;
  std::string failure;
  // The converter reports some failures on std::cerr and returns its input
  // unchanged: its output is captured, and an unchanged opset is a failure.
  std::ostringstream converter_output;
  std::streambuf* saved = std::cerr.rdbuf(converter_output.rdbuf());
  onnx::ModelProto converted;
  try {
    try {
      onnx::shape_inference::InferShapes(input);
    } catch (const std::exception&) {
      // Shapes stay as declared; the converter says what it misses.
    }
    if (opset < 7) unsqueeze_legacy_broadcast_operands(*input.mutable_graph());
    converted = onnx::version_conversion::ConvertVersion(input, static_cast<int>(target));
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::cerr.rdbuf(saved);
  int64_t converted_opset = -1;
  for (const auto& o : converted.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") converted_opset = o.version();
  if (failure.empty() && converted_opset != target) {
    failure = converter_output.str();
    if (failure.empty()) failure = "the model was returned unconverted";
  }
  while (!failure.empty() && (failure.back() == '\n' || failure.back() == ' ')) failure.pop_back();
  if (!failure.empty())
    throw UnsupportedError(what + ": ONNX's version converter cannot convert the model from opset " +
                           std::to_string(opset) + " to " + std::to_string(target) + ": " + failure);
  return converted;
}

}  // namespace kiln::onnx_import
