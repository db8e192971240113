// The ONNX importer's driver: load and check the model, bind the inputs,
// convert the nodes, assemble @main. The per-op work is in convert_*.cc.
#include "frontend/onnx/importer.h"

#include <algorithm>
#include <cstdio>

#include <fstream>
#include <iostream>
#include <sstream>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/onnx_tensor.h"
#include "frontend/onnx/opset_upgrade.h"
#include "ir/model_names.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "runtime/file_io.h"

#include <google/protobuf/io/coded_stream.h>

namespace kiln {

using namespace onnx_import;

namespace {

// The opsets the converters read natively; others are converted to the
// nearest end of this range with ONNX's version converter on import.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 18;

std::string node_label(const onnx::NodeProto& node, int64_t opset) {
  std::string s = node.op_type();
  if (!is_default_domain(node.domain())) s = node.domain() + "." + s;
  s += " (opset " + std::to_string(opset) + ")";
  s += node.name().empty()
           ? " node producing '" + (node.output_size() ? node.output(0) : std::string("?")) + "'"
           : " node '" + node.name() + "'";
  return s;
}

// The version the model imports of each operator domain ("" is the default
// domain, however the model spells it).
using DomainOpsets = std::map<std::string, int64_t>;

DomainOpsets domain_opsets(const onnx::ModelProto& model) {
  DomainOpsets opsets;
  for (const auto& o : model.opset_import())
    opsets[is_default_domain(o.domain()) ? std::string() : o.domain()] = o.version();
  return opsets;
}

bool uses_default_domain(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node())
    if (is_default_domain(node.domain())) return true;
  return false;
}

// The default domain's opset. A model of operators from other domains only
// (a training step: ai.onnx.preview.training) may import no default version;
// nothing is converted then.
int64_t default_opset(const onnx::ModelProto& model, const DomainOpsets& opsets, int64_t none,
                      const std::string& what) {
  auto it = opsets.find("");
  if (it != opsets.end()) return it->second;
  if (!uses_default_domain(model.graph())) return none;
  throw UnsupportedError(what +
                         ": the model imports no version of the default ONNX domain (opset_import), "
                         "which its nodes use; add an opset_import entry for domain \"\" (ai.onnx)");
}

// The opset a node is read under: its domain's version (0 when the model
// imports none; the checker reports that).
int64_t node_opset(const onnx::NodeProto& node, const DomainOpsets& opsets) {
  auto it = opsets.find(is_default_domain(node.domain()) ? std::string() : node.domain());
  return it == opsets.end() ? 0 : it->second;
}

// ONNX's own checker, when the installed library knows the model's opset
// (it rejects opsets newer than itself, which kiln's converters still read).
// ONNX's checker looks for external data files relative to the current
// folder (check_model(ModelProto) takes no model folder), and kiln reads them
// itself, within the file size limit (onnx_tensor.cc). So the checker is
// shown a copy in which each external initializer is a graph input of the
// same type.
onnx::ModelProto without_external_data(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  auto* inits = copy.mutable_graph()->mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    const onnx::TensorProto& t = inits->Get(i);
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
    bool listed = false;
    for (const auto& in : copy.graph().input()) listed = listed || in.name() == t.name();
    if (!listed) {
      auto* in = copy.mutable_graph()->add_input();
      in->set_name(t.name());
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    inits->DeleteSubrange(i, 1);
  }
  return copy;
}

bool has_external_data(const onnx::ModelProto& model) {
  for (const auto& t : model.graph().initializer())
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return true;
  return false;
}

void run_checker(const onnx::ModelProto& model, int64_t opset, const std::string& what) {
  if (opset > newest_known_opset()) return;
  try {
    if (has_external_data(model))
      onnx::checker::check_model(without_external_data(model));
    else
      onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw Error(what + ": not a valid ONNX model (ONNX checker): " + msg);
  }
}

// Every node kiln cannot convert, all at once.
void check_supported(const onnx::GraphProto& graph, const DomainOpsets& opsets, const std::string& what) {
  std::vector<std::string> problems;
  std::map<std::string, int> seen;
  for (const auto& node : graph.node()) {
    std::string reason;
    int64_t opset = node_opset(node, opsets);
    if (!is_default_domain(node.domain()) && node.domain() != kTrainingDomain) {
      reason = "operator domain '" + node.domain() +
               "' is not supported (kiln converts the default domain and " + kTrainingDomain + ")";
    } else {
      auto it = converters().find(converter_key(node));
      if (it == converters().end()) {
        reason = "no converter for this operator";
      } else if (opset < it->second.min_opset) {
        reason = "needs opset " + std::to_string(it->second.min_opset) + " or newer";
      } else {
        for (const auto& op : it->second.needs)
          if (!find_op(op)) reason = "kiln op '" + op + "' is not registered";
      }
    }
    if (reason.empty()) continue;
    if (seen[node.op_type()]++ >= 3) continue;  // a few nodes per op are enough
    problems.push_back("  " + node_label(node, opset) + ": " + reason);
  }
  if (problems.empty()) return;
  std::string msg = what + ": " + std::to_string(problems.size()) + " unsupported node(s):\n";
  for (const auto& p : problems) msg += p + "\n";
  for (const auto& [op, count] : seen)
    if (count > 3) msg += "  (and " + std::to_string(count - 3) + " more " + op + " node(s))\n";
  msg += "supported operators: `kiln import --list-ops`";
  throw UnsupportedError(msg);
}

std::string dims_str(const onnx::TensorShapeProto& shape) {
  std::string s = "(";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto& d = shape.dim(i);
    s += i ? ", " : "";
    s += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
  }
  return s + ")";
}

// The kiln parameters for the graph inputs that are not initializers.
std::vector<Var> bind_inputs(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                             const ImportOptions& opts, GraphBuilder& g, const std::string& what) {
  std::vector<Var> params;
  std::vector<std::string> unbound, input_names;
  std::set<std::string> used_options, onnx_names;
  for (const auto& in : graph.input()) onnx_names.insert(in.name());
  for (const auto& in : graph.input()) {
    if (initializers.count(in.name()) || opts.constant_inputs.count(in.name())) continue;
    std::string kiln_name = g.unique_name(in.name());
    input_names.push_back(in.name() == kiln_name ? in.name() : in.name() + " (%" + kiln_name + ")");
    if (!in.type().has_tensor_type())
      throw UnsupportedError(what + ": graph input '" + in.name() +
                             "' is not a tensor (sequences, maps and "
                             "optionals are not supported)");
    const auto& tt = in.type().tensor_type();
    auto dtype = dtype_from_onnx(tt.elem_type());
    if (!dtype)
      throw UnsupportedError(what + ": graph input '" + in.name() + "' has element type " +
                             onnx_type_name(tt.elem_type()) + ", which kiln does not support");
    if (!tt.has_shape())
      throw Error(what + ": graph input '" + in.name() + "' has no shape; give one with --input-shape " +
                  in.name() + "=D0,D1,...");
    Shape shape;
    bool symbolic = false;
    for (const auto& d : tt.shape().dim()) {
      shape.push_back(d.has_dim_value() ? d.dim_value() : kSymbolicDim);
      symbolic = symbolic || !d.has_dim_value() || d.dim_value() < 0;
    }
    // By the ONNX name, or by the kiln name (with or without '%') unless
    // that is some input's ONNX name.
    auto bound = opts.input_shapes.find(in.name());
    for (const std::string& alias : {kiln_name, "%" + kiln_name})
      if (bound == opts.input_shapes.end() && !onnx_names.count(alias)) bound = opts.input_shapes.find(alias);
    if (bound != opts.input_shapes.end()) {
      used_options.insert(bound->first);
      const Shape& b = bound->second;
      bool ok = b.size() == shape.size();
      for (size_t i = 0; ok && i < b.size(); ++i) ok = b[i] >= 0 && (shape[i] < 0 || shape[i] == b[i]);
      if (!ok)
        throw Error(what + ": --input-shape " + in.name() + "=" + shape_str(b) +
                    " does not match the model's " + dims_str(tt.shape()));
      shape = b;
    } else if (symbolic) {
      unbound.push_back(in.name() + " " + dims_str(tt.shape()));
    }
    // A static shape is checked now, naming the input, before anything sized by it.
    if (std::none_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
      checked_tensor_bytes(shape, *dtype, what + ": graph input '" + in.name() + "'");
    params.push_back(make_var(kiln_name, tensor_type(shape, *dtype)));
  }
  for (const auto& [name, shape] : opts.input_shapes)
    if (!used_options.count(name)) {
      std::string names;
      for (const auto& n : input_names) names += (names.empty() ? "" : ", ") + n;
      throw Error(what + ": --input-shape names '" + name +
                  "', which is not an input of the model (inputs: " + (names.empty() ? "none" : names) +
                  "); use the model's input names");
    }
  for (const auto& [name, value] : opts.constant_inputs)
    if (!onnx_names.count(name) || initializers.count(name))
      throw Error(what + ": --input-value names '" + name +
                  "', which is not an input of the model; use the model's ONNX input names");
  if (!unbound.empty()) {
    std::string msg = what + ": input(s) with symbolic dimensions must be bound to static shapes:";
    for (const auto& u : unbound) msg += "\n  " + u;
    msg += "\nbind each with --input-shape NAME=D0,D1,... (e.g. --input-shape " +
           unbound[0].substr(0, unbound[0].find(' ')) + "=1,3,320,320)";
    throw Error(msg);
  }
  return params;
}

// The offset of the first byte of `s` that is not valid UTF-8 (a stray
// continuation byte, a truncated or overlong sequence, a surrogate, past
// U+10FFFF: the rule of kiln's lexer), or npos.
size_t invalid_utf8_at(const std::string& s) {
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<uint8_t>(s[i]) : 0; };
  for (size_t i = 0; i < s.size();) {
    uint8_t b0 = byte(i);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t n = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
    if (n == 0) return i;
    for (size_t k = 1; k < n; ++k)
      if ((byte(i + k) & 0xC0) != 0x80) return i;
    uint8_t b1 = byte(i + 1);
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0) || (b0 == 0xF0 && b1 < 0x90) ||
        (b0 == 0xF4 && b1 >= 0x90))
      return i;
    i += n;
  }
  return std::string::npos;
}

// ONNX strings are UTF-8 by the standard, but protobuf does not check it in
// ONNX's proto2 messages. Names and string attributes reach the module (and
// its .kir text, which must be UTF-8), so other bytes are an error here,
// naming the string, rather than a .kir that kiln cannot read back.
void check_utf8(const std::string& s, const std::string& field, const std::string& what) {
  size_t at = invalid_utf8_at(s);
  if (at == std::string::npos) return;
  std::string shown;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      shown += static_cast<char>(c);
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    shown += hex;
  }
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(s[at]));
  throw Error(what + ": " + field + " \"" + shown + "\" is not valid UTF-8 (byte " + byte + " at offset " +
              std::to_string(at) + "); ONNX strings are UTF-8: fix the name in the exporter");
}

void check_graph_utf8(const onnx::GraphProto& g, const std::string& what) {
  check_utf8(g.name(), "the graph name", what);
  for (const auto& v : g.input()) check_utf8(v.name(), "the input name", what);
  for (const auto& v : g.output()) check_utf8(v.name(), "the output name", what);
  for (const auto& v : g.value_info()) check_utf8(v.name(), "the value name", what);
  for (const auto& t : g.initializer()) check_utf8(t.name(), "the initializer name", what);
  for (const auto& n : g.node()) {
    check_utf8(n.name(), "the node name", what);
    check_utf8(n.op_type(), "the operator name", what);
    check_utf8(n.domain(), "the operator domain", what);
    for (const auto& i : n.input()) check_utf8(i, "the node input", what);
    for (const auto& o : n.output()) check_utf8(o, "the node output", what);
    for (const auto& a : n.attribute()) {
      check_utf8(a.name(), "the attribute name", what);
      check_utf8(a.s(), "the string of attribute " + a.name(), what);
      for (const auto& str : a.strings()) check_utf8(str, "a string of attribute " + a.name(), what);
      if (a.has_g()) check_graph_utf8(a.g(), what);
      for (const auto& sub : a.graphs()) check_graph_utf8(sub, what);
    }
  }
}

// Parses `bytes` with protobuf's nesting limit set to `depth` messages.
bool parse_model(const std::string& bytes, int depth, onnx::ModelProto& model) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(depth);
  return model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// Protobuf reads at most this many nested messages. Each If, Loop or Scan
// body is three levels deeper (node, attribute, graph).
constexpr int kProtobufDepth = 100;

// The model, or an Error that says why it cannot be read: not protobuf, or
// subgraphs nested deeper than protobuf reads (told apart by parsing again
// with a deeper limit, which only a too-deep model passes).
onnx::ModelProto parse_model_proto(const std::string& bytes, const std::string& what) {
  if (bytes.empty()) throw Error(what + ": the file is empty, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw Error(what + ": " + bytes_str(bytes.size()) + "; protobuf reads ONNX models of less than 2 GiB " +
                "(store the weights as external data)");
  onnx::ModelProto model;
  if (parse_model(bytes, kProtobufDepth, model)) return model;
  onnx::ModelProto deeper;
  if (parse_model(bytes, 20 * kProtobufDepth, deeper))
    throw Error(what +
                ": the model nests subgraphs (If, Loop or Scan bodies) deeper than protobuf's limit of " +
                std::to_string(kProtobufDepth) +
                " nested messages, about 33 levels of subgraphs; flatten the nesting (e.g. fold the If "
                "conditions that are constants) before importing");
  throw Error(what +
              ": not an ONNX model (protobuf parse failed; is the file truncated or of another format?)");
}

}  // namespace

Module import_onnx_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opts,
                         const std::string& base_dir) {
  onnx::ModelProto model = parse_model_proto(bytes, what);
  if (model.has_graph()) check_graph_utf8(model.graph(), what);
  if (!model.has_graph()) throw Error(what + ": the ONNX model has no graph");
  DomainOpsets opsets = domain_opsets(model);
  int64_t opset = default_opset(model, opsets, kMaxOpset, what);
  if (opset < kMinOpset || opset > kMaxOpset) {
    int64_t newest = newest_known_opset();
    if (opset > newest)
      throw UnsupportedError(what + ": the model uses opset " + std::to_string(opset) +
                             "; kiln imports opsets " + std::to_string(kMinOpset) + " to " +
                             std::to_string(kMaxOpset) + " and converts opsets 1 to " +
                             std::to_string(newest) + " (the newest the installed ONNX library knows)");
    // libonnx's converter reads the graph unchecked and can crash on a
    // malformed one: ONNX's checker first.
    run_checker(model, opset, what);
    int64_t target = opset < kMinOpset ? kMinOpset : kMaxOpset;
    model = convert_opset(model, opset, target, what);
    (opts.log ? *opts.log : std::cerr) << what << ": converted from opset " << opset << " to " << target
                                       << " with ONNX's version converter\n";
    opset = target;
    opsets[""] = target;
  }
  const onnx::GraphProto& graph = model.graph();
  // Unsupported operators first: ONNX's checker would stop at the first
  // operator it does not know, and the user wants the whole list.
  check_supported(graph, opsets, what);
  run_checker(model, opset, what);

  GraphBuilder g;
  std::map<std::string, Expr> values;
  std::set<std::string> initializer_names;
  for (const auto& init : graph.initializer()) initializer_names.insert(init.name());
  std::vector<Var> params = bind_inputs(graph, initializer_names, opts, g, what);
  ModelNames names;
  {
    size_t k = 0;
    for (const auto& in : graph.input()) {
      if (initializer_names.count(in.name())) continue;
      auto frozen = opts.constant_inputs.find(in.name());
      if (frozen != opts.constant_inputs.end()) {
        values[in.name()] = make_constant(frozen->second);
        continue;
      }
      names.inputs[params[k]->name] = in.name();
      values[in.name()] = params[k++];
      g.add_graph_input(in.name());
    }
  }
  for (const auto& init : graph.initializer()) {
    Tensor t;
    try {
      t = tensor_from_proto(init, base_dir);
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(what + ": initializer " + e.message());
    } catch (const Error& e) {
      throw Error(what + ": initializer " + e.message());
    }
    std::string name = t.numel() > opts.inline_limit ? g.unique_name(init.name()) : "";
    values[init.name()] = make_constant(t, name);
  }

  for (const auto& node : graph.node()) {
    const Converter& conv = converters().at(converter_key(node));
    g.set_name_hint(node.output_size() && !node.output(0).empty() ? node.output(0) : node.op_type());
    int64_t opset = node_opset(node, opsets);
    NodeContext ctx(node, opset, g, values, base_dir);
    try {
      conv.fn(ctx);
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(what + ": " + node_label(node, opset) + ": " + e.message());
    } catch (const Error& e) {
      throw Error(what + ": " + node_label(node, opset) + ": " + e.message());
    }
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty() && !values.count(node.output(i)))
        throw UnsupportedError(what + ": " + node_label(node, opset) + ": output " + std::to_string(i) +
                               " is not supported by kiln's converter");
  }

  std::vector<Expr> results;
  for (const auto& out : graph.output()) {
    names.outputs.push_back(out.name());
    auto it = values.find(out.name());
    if (it == values.end())
      throw Error(what + ": graph output '" + out.name() + "' is not computed by any node");
    results.push_back(it->second);
  }
  if (results.empty()) throw Error(what + ": the graph has no outputs");
  Expr result = results.size() == 1 ? results[0] : make_tuple(results);
  Module m;
  m.set(make_function("main", std::move(params), std::move(g.bindings()), result));
  set_model_names(m, names);
  return m;
}

ModelNames onnx_model_names(const std::string& path) {
  onnx::ModelProto model = parse_model_proto(read_file(path, "ONNX model"), path);
  if (!model.has_graph()) throw Error(path + ": the ONNX model has no graph");
  const onnx::GraphProto& graph = model.graph();
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  // The names bind_inputs gives: the inputs' names made unique in order,
  // before any other name is taken.
  GraphBuilder g;
  ModelNames names;
  for (const auto& in : graph.input())
    if (!initializers.count(in.name())) names.inputs[g.unique_name(in.name())] = in.name();
  for (const auto& out : graph.output()) names.outputs.push_back(out.name());
  return names;
}

Module import_onnx(const std::string& path, const ImportOptions& opts) {
  std::string bytes = read_file(path, "ONNX model");
  std::string base_dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  return import_onnx_bytes(bytes, path, opts, base_dir);
}

void parse_input_shape_flag(const std::string& flag, ImportOptions& opts) {
  auto eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--input-shape '" + flag + "': expected NAME=D0,D1,... (e.g. x=1,3,320,320)");
  std::string name = flag.substr(0, eq);
  Shape shape;
  std::stringstream ss(flag.substr(eq + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t d = -1;
    try {
      d = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || d < 0)
      throw Error("--input-shape '" + flag + "': '" + item + "' is not a non-negative dimension");
    shape.push_back(d);
  }
  opts.input_shapes[name] = shape;
}

std::vector<std::string> supported_onnx_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, conv] : converters()) {
    bool ok = true;
    for (const auto& op : conv.needs) ok = ok && find_op(op) != nullptr;
    if (ok) ops.push_back(name);
  }
  return ops;
}

}  // namespace kiln
