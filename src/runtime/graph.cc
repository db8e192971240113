// kiln.graph: JSON writer, reader and validation.
#include "runtime/graph.h"

#include <map>
#include <nlohmann/json.hpp>

namespace kiln {

using json = nlohmann::json;

namespace {

// A bounded dynamic leading axis (TensorDesc::bounded_outer) is written as
// "bounded": true, shape[0] being the bound; a static value has no such key.
json value_json(const GraphValue& v) {
  json j{{"name", v.name}, {"shape", v.desc.shape}, {"dtype", std::string(dtype_name(v.desc.dtype))}};
  if (v.desc.bounded_outer) j["bounded"] = true;
  return j;
}

json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

// Reading: every accessor names what is missing, so a malformed file says where.
struct Reader {
  std::string what;

  [[noreturn]] void fail(const std::string& where, const std::string& msg) const {
    throw Error(what + ": malformed kiln.graph: " + where + ": " + msg);
  }
  const json& field(const json& j, const char* key, const std::string& where) const {
    if (!j.is_object()) fail(where, "expected an object");
    auto it = j.find(key);
    if (it == j.end()) fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }
  std::string str(const json& j, const char* key, const std::string& where) const {
    const json& v = field(j, key, where);
    if (!v.is_string()) fail(where, std::string("\"") + key + "\" must be a string");
    return v.get<std::string>();
  }
  const json& array(const json& j, const char* key, const std::string& where) const {
    const json& v = field(j, key, where);
    if (!v.is_array()) fail(where, std::string("\"") + key + "\" must be an array");
    return v;
  }
  GraphValue value(const json& j, const std::string& where) const {
    GraphValue v;
    v.name = str(j, "name", where);
    const json& shape = array(j, "shape", where + " " + v.name);
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail(where + " " + v.name, "shape must hold sizes >= 0");
      v.desc.shape.push_back(d.get<int64_t>());
    }
    std::string dt = str(j, "dtype", where + " " + v.name);
    auto t = dtype_from_name(dt);
    if (!t) fail(where + " " + v.name, "unknown dtype \"" + dt + "\"");
    v.desc.dtype = *t;
    if (auto b = j.find("bounded"); b != j.end()) {
      if (!b->is_boolean()) fail(where + " " + v.name, "\"bounded\" must be true or false");
      v.desc.bounded_outer = b->get<bool>();
      if (v.desc.bounded_outer && v.desc.shape.empty())
        fail(where + " " + v.name, "a scalar cannot have a bounded dynamic leading axis");
    }
    return v;
  }
  AttrValue attr(const json& j, const std::string& where) const {
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_float()) return j.get<double>();
    if (j.is_string()) return j.get<std::string>();
    if (j.is_array()) {
      bool all_int = true;
      for (const auto& x : j) {
        if (!x.is_number()) fail(where, "list attributes must hold numbers");
        all_int = all_int && x.is_number_integer();
      }
      if (all_int) return j.get<std::vector<int64_t>>();
      return j.get<std::vector<double>>();
    }
    fail(where, "attribute of unsupported JSON type");
  }
};

}  // namespace

std::string graph_to_json(const Graph& g) {
  json j;
  j["format"] = "kiln.graph";
  j["version"] = kGraphFormatVersion;
  j["name"] = g.name;
  j["inputs"] = json::array();
  for (const auto& v : g.inputs) j["inputs"].push_back(value_json(v));
  j["constants"] = json::array();
  for (const auto& v : g.constants) j["constants"].push_back(value_json(v));
  j["nodes"] = json::array();
  for (const auto& n : g.nodes) {
    json jn{{"name", n.name}, {"inputs", n.inputs}};
    if (!n.callee.empty())
      jn["callee"] = n.callee;
    else if (!n.kernel.empty())
      jn["kernel"] = n.kernel;
    else
      jn["op"] = n.op;
    jn["outputs"] = json::array();
    for (const auto& v : n.outputs) jn["outputs"].push_back(value_json(v));
    jn["attrs"] = json::object();
    for (const auto& [k, v] : n.attrs.items()) jn["attrs"][k] = attr_json(v);
    if (n.group >= 0) jn["group"] = n.group;
    if (!n.pattern.empty()) jn["pattern"] = n.pattern;
    j["nodes"].push_back(std::move(jn));
  }
  j["outputs"] = g.outputs;
  return j.dump(1);
}

Graph graph_from_json(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(what + ": not valid JSON: " + e.what());
  }
  Reader r{what};
  if (r.str(j, "format", "top level") != "kiln.graph")
    r.fail("top level", "\"format\" must be \"kiln.graph\"");
  const json& version = r.field(j, "version", "top level");
  if (!version.is_number_integer() || version.get<int64_t>() != kGraphFormatVersion)
    throw Error(what + ": kiln.graph version " + version.dump() +
                " is not supported (this kiln reads version " + std::to_string(kGraphFormatVersion) +
                "); recompile the model with this kiln");
  Graph g;
  g.name = r.str(j, "name", "top level");
  for (const auto& v : r.array(j, "inputs", "top level")) g.inputs.push_back(r.value(v, "input"));
  for (const auto& v : r.array(j, "constants", "top level")) g.constants.push_back(r.value(v, "constant"));
  for (const auto& jn : r.array(j, "nodes", "top level")) {
    GraphNode n;
    n.name = r.str(jn, "name", "node");
    std::string where = "node " + n.name;
    if (jn.contains("callee"))
      n.callee = r.str(jn, "callee", where);
    else if (jn.contains("kernel"))
      n.kernel = r.str(jn, "kernel", where);
    else
      n.op = r.str(jn, "op", where);
    for (const auto& i : r.array(jn, "inputs", where)) {
      if (!i.is_string()) r.fail(where, "inputs must be value names");
      n.inputs.push_back(i.get<std::string>());
    }
    for (const auto& v : r.array(jn, "outputs", where)) n.outputs.push_back(r.value(v, where + " output"));
    const json& attrs = r.field(jn, "attrs", where);
    if (!attrs.is_object()) r.fail(where, "\"attrs\" must be an object");
    for (const auto& [k, v] : attrs.items()) n.attrs.set(k, r.attr(v, where + " attribute " + k));
    if (jn.contains("group")) {
      if (!jn["group"].is_number_integer()) r.fail(where, "\"group\" must be an integer");
      n.group = jn["group"].get<int64_t>();
    }
    if (jn.contains("pattern")) n.pattern = r.str(jn, "pattern", where);
    g.nodes.push_back(std::move(n));
  }
  for (const auto& o : r.array(j, "outputs", "top level")) {
    if (!o.is_string()) r.fail("outputs", "outputs must be value names");
    g.outputs.push_back(o.get<std::string>());
  }
  validate_graph(g, what);
  return g;
}

void validate_graph(const Graph& g, const std::string& what) {
  std::map<std::string, TensorDesc> defined;
  auto define = [&](const GraphValue& v, const std::string& where) {
    if (v.name.empty()) throw Error(what + ": malformed kiln.graph: " + where + ": a value without a name");
    if (!defined.emplace(v.name, v.desc).second)
      throw Error(what + ": malformed kiln.graph: " + where + ": value '" + v.name + "' is defined twice");
  };
  for (const auto& v : g.inputs) define(v, "input");
  for (const auto& v : g.constants) define(v, "constant");
  for (const auto& n : g.nodes) {
    std::string where = "node " + n.name;
    std::vector<TensorDesc> in;
    for (const auto& i : n.inputs) {
      auto it = defined.find(i);
      if (it == defined.end())
        throw Error(what + ": malformed kiln.graph: " + where + ": input '" + i +
                    "' is not defined before use");
      in.push_back(it->second);
    }
    if (n.callee.empty() && n.kernel.empty()) {
      const OpDef* op = find_op(n.op);
      if (!op) throw Error(what + ": malformed kiln.graph: " + where + ": unknown op '" + n.op + "'");
      std::vector<TensorDesc> out;
      try {
        out = infer_op(*op, in, n.attrs);
      } catch (const Error& e) {
        throw Error(what + ": malformed kiln.graph: " + where + ": " + e.message());
      }
      bool same = out.size() == n.outputs.size();
      for (size_t i = 0; same && i < out.size(); ++i) same = out[i] == n.outputs[i].desc;
      if (!same)
        throw Error(what + ": malformed kiln.graph: " + where + ": recorded output types differ from " +
                    n.op + "'s inference");
    }
    for (const auto& v : n.outputs) define(v, where);
  }
  for (const auto& o : g.outputs)
    if (!defined.count(o)) throw Error(what + ": malformed kiln.graph: output '" + o + "' is not defined");
}

}  // namespace kiln
