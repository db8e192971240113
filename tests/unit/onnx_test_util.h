// Builds small ONNX models in memory for the importer tests.
#pragma once

#include <string>
#include <vector>

#include "frontend/onnx/onnx_tensor.h"
#include "onnx/onnx_pb.h"

namespace kiln::onnx_test {

// dims: a number >= 0 is static; -1 is a symbolic dimension named "N<i>".
inline void add_value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
                           const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (dims[i] >= 0)
      d->set_dim_value(dims[i]);
    else
      d->set_dim_param("N" + std::to_string(i));
  }
}

struct ModelBuilder {
  onnx::ModelProto model;
  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    auto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model.mutable_graph()->set_name("test");
  }
  onnx::GraphProto& graph() { return *model.mutable_graph(); }
  void input(const std::string& name, const std::vector<int64_t>& dims,
             int32_t t = onnx::TensorProto_DataType_FLOAT) {
    add_value_info(graph().add_input(), name, t, dims);
  }
  void output(const std::string& name, const std::vector<int64_t>& dims,
              int32_t t = onnx::TensorProto_DataType_FLOAT) {
    add_value_info(graph().add_output(), name, t, dims);
  }
  void initializer(const std::string& name, const Tensor& t) {
    *graph().add_initializer() = onnx_import::tensor_to_proto(t, name);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  std::string bytes() const { return model.SerializeAsString(); }
};

inline void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
inline void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(v);
}
inline void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace kiln::onnx_test
