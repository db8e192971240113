// The acme_npu program: compiled from kiln.graph, parsed, run.
#include "acme_program.h"

#include <cctype>
#include <memory>
#include <sstream>

namespace acme {
namespace {

// Just enough JSON for kiln.graph: objects, arrays, strings, numbers, literals.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json* get(const std::string& key) const {
    auto it = fields.find(key);
    return kind == Object && it != fields.end() ? &it->second : nullptr;
  }
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool parse(Json* out) { return value(out) && (skip(), at_ == s_.size()); }

 private:
  void skip() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  bool eat(char c) {
    skip();
    if (at_ < s_.size() && s_[at_] == c) return ++at_, true;
    return false;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (c == '\\') {
        if (at_ >= s_.size()) return false;
        c = s_[at_++];
        if (c == 'u') return false;  // kiln's names and ops are plain ASCII
        c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
      }
      out->push_back(c);
    }
    return eat('"');
  }
  bool value(Json* out) {
    skip();
    if (at_ >= s_.size() || ++depth_ > 64) return false;
    char c = s_[at_];
    bool ok = false;
    if (c == '{') {
      out->kind = Json::Object;
      ++at_;
      ok = eat('}');
      while (!ok) {
        std::string key;
        Json v;
        if (!string(&key) || !eat(':') || !value(&v)) return false;
        out->fields[key] = std::move(v);
        if (eat('}'))
          ok = true;
        else if (!eat(','))
          return false;
      }
    } else if (c == '[') {
      out->kind = Json::Array;
      ++at_;
      ok = eat(']');
      while (!ok) {
        Json v;
        if (!value(&v)) return false;
        out->items.push_back(std::move(v));
        if (eat(']'))
          ok = true;
        else if (!eat(','))
          return false;
      }
    } else if (c == '"') {
      out->kind = Json::String;
      ok = string(&out->text);
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t used = 0;
      out->kind = Json::Number;
      out->number = std::stod(s_.substr(at_, 32), &used);
      at_ += used;
      ok = true;
    } else {
      for (const char* lit : {"true", "false", "null"})
        if (s_.compare(at_, std::string(lit).size(), lit) == 0) {
          out->kind = lit[0] == 'n' ? Json::Null : Json::Bool;
          out->number = lit[0] == 't';
          at_ += std::string(lit).size();
          ok = true;
        }
    }
    --depth_;
    return ok;
  }

  const std::string& s_;
  size_t at_ = 0;
  int depth_ = 0;
};

// Elements of a {"name", "shape", "dtype"} value; -1 unless float32.
int64_t float_elements(const Json& v) {
  const Json* dtype = v.get("dtype");
  const Json* shape = v.get("shape");
  if (!dtype || dtype->text != "float32" || !shape) return -1;
  int64_t n = 1;
  for (const Json& d : shape->items) n *= static_cast<int64_t>(d.number);
  return n;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Add:
      return "add";
    case Op::Subtract:
      return "subtract";
    case Op::Multiply:
      return "multiply";
    case Op::Relu:
      return "relu";
  }
  return "?";
}

}  // namespace

bool op_from_name(const std::string& name, Op* op) {
  for (Op o : {Op::Add, Op::Subtract, Op::Multiply, Op::Relu})
    if (name == op_name(o) || (o == Op::Relu && name == "nn.relu")) return *op = o, true;
  return false;
}

int op_arity(Op op) { return op == Op::Relu ? 1 : 2; }

std::string compile_program(const std::string& graph_json, std::string* text) {
  Json g;
  if (!Reader(graph_json).parse(&g) || !g.get("format") || g.get("format")->text != "kiln.graph")
    return "not kiln.graph JSON";
  if (!g.get("version") || g.get("version")->number != 1) return "kiln.graph version 1 expected";
  std::ostringstream out;
  out << "acme_npu program 1\n";
  for (const char* section : {"inputs", "constants"})
    if (const Json* values = g.get(section))
      for (const Json& v : values->items) {
        int64_t n = float_elements(v);
        if (n < 0) return "value " + v.get("name")->text + " is not float32";
        out << (section[0] == 'i' ? "input " : "constant ") << v.get("name")->text << " " << n << "\n";
      }
  const Json* nodes = g.get("nodes");
  if (!nodes) return "the graph has no nodes";
  for (const Json& node : nodes->items) {
    Op op;
    const Json* name = node.get("op");
    if (!name || !op_from_name(name->text, &op))
      return "op " + (name ? name->text : "(a call)") + " is not an acme op";
    const Json& result = node.get("outputs")->items.at(0);
    out << "value " << result.get("name")->text << " " << float_elements(result) << "\n";
    out << "op " << op_name(op) << " " << result.get("name")->text;
    for (const Json& in : node.get("inputs")->items) out << " " << in.text;
    out << "\n";
  }
  for (const Json& o : g.get("outputs")->items) out << "output " << o.text << "\n";
  *text = out.str();
  return "";
}

std::string parse_program(const std::string& text, Program* p) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "acme_npu program 1") return "not an acme_npu program (version 1)";
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, name;
    words >> kind >> name;
    if (kind == "input" || kind == "constant" || kind == "value") {
      int64_t n = -1;
      if (!(words >> n) || n < 0) return "bad size in: " + line;
      p->elements[name] = n;
      if (kind == "input") p->inputs.emplace_back(name, n);
      if (kind == "constant") p->constants.emplace_back(name, n);
    } else if (kind == "op") {
      Instruction ins;
      if (!op_from_name(name, &ins.op) || !(words >> ins.result)) return "bad instruction: " + line;
      for (std::string v; words >> v;) ins.operands.push_back(v);
      if (static_cast<int>(ins.operands.size()) != op_arity(ins.op)) return "wrong operand count: " + line;
      for (const auto& v : ins.operands)
        if (!p->elements.count(v) || p->elements[v] != p->elements[ins.result])
          return "operand " + v + " is undefined or of another size: " + line;
      p->code.push_back(std::move(ins));
    } else if (kind == "output") {
      if (!p->elements.count(name)) return "undefined output " + name;
      p->outputs.push_back(name);
    } else {
      return "unknown line: " + line;
    }
  }
  return "";
}

std::string Program::run(const std::vector<const float*>& in,
                         const std::map<std::string, const float*>& consts,
                         const std::vector<float*>& out) const {
  if (in.size() != inputs.size() || out.size() != outputs.size()) return "wrong number of inputs or outputs";
  // Values computed by this run only: nothing is kept between runs.
  std::map<std::string, const float*> at;
  std::map<std::string, std::unique_ptr<float[]>> temps;
  for (size_t i = 0; i < in.size(); ++i) at[inputs[i].first] = in[i];
  for (const auto& [name, n] : constants) {
    auto it = consts.find(name);
    if (it == consts.end()) return "constant " + name + " was not given";
    at[name] = it->second;
  }
  for (const Instruction& ins : code) {
    int64_t n = elements.at(ins.result);
    float* y = (temps[ins.result] = std::make_unique<float[]>(n)).get();
    const float* a = at.at(ins.operands[0]);
    const float* b = ins.operands.size() > 1 ? at.at(ins.operands[1]) : nullptr;
    for (int64_t i = 0; i < n; ++i) switch (ins.op) {
        case Op::Add:
          y[i] = a[i] + b[i];
          break;
        case Op::Subtract:
          y[i] = a[i] - b[i];
          break;
        case Op::Multiply:
          y[i] = a[i] * b[i];
          break;
        case Op::Relu:
          y[i] = a[i] > 0.0f ? a[i] : 0.0f;
          break;
      }
    at[ins.result] = y;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const float* v = at.at(outputs[i]);
    for (int64_t k = 0; k < elements.at(outputs[i]); ++k) out[i][k] = v[k];
  }
  return "";
}

}  // namespace acme
