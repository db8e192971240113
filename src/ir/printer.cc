// The .kir printer. The grammar is in docs/ir.md; the parser (parser.cc)
// reads back exactly what this writes.
//
// Variables are printed under unique, well-formed names: passes may leave two
// variables with one name, or names from an importer with characters the
// lexer does not take, and the parser rejects both. Structural equality does
// not look at variable names, so renaming keeps the round trip exact.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include "ir/text.h"
#include "tir/text.h"

namespace kiln {
namespace {

bool is_plain_name(const std::string& s, bool allow_dot) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              (allow_dot && c == '.');
    if (!ok) return false;
  }
  return s[0] != '.';
}

bool is_identifier(const std::string& s) { return is_plain_name(s, false) && !(s[0] >= '0' && s[0] <= '9'); }

std::string global_name(const std::string& name) {
  return "@" + (is_plain_name(name, true) ? name : quote_string(name));
}

std::string attr_key(const std::string& key) { return is_identifier(key) ? key : quote_string(key); }

std::string attrs_block(const Attrs& attrs) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : attrs.items()) {
    s += (first ? "" : ", ") + attr_key(k) + " = " + attr_value_str(v);
    first = false;
  }
  return s + "}";
}

// Shortest decimal text of a float32 that the parser's path (strtod, then a
// cast to float) turns back into the same bits.
std::string float32_text(float f) {
  if (std::isnan(f)) return std::signbit(f) ? "-nan" : "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(f));
    if (static_cast<float>(std::strtod(buf, nullptr)) == f) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Shortest decimal text of a float64 that strtod reads back to the same bits.
std::string float64_text(double d) {
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Every half value is exactly a float, and the parser's path to a half goes
// through float, so the float text reads back to the same half.
std::string float16_text(uint16_t h) { return float32_text(half_to_float(h)); }

std::string element_text(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32:
      return float32_text(t.data<float>()[i]);
    case DType::Float16:
      return float16_text(t.data<uint16_t>()[i]);
    case DType::Int8:
      return std::to_string(t.data<int8_t>()[i]);
    case DType::UInt8:
      return std::to_string(t.data<uint8_t>()[i]);
    case DType::Int32:
      return std::to_string(t.data<int32_t>()[i]);
    case DType::Int64:
      return std::to_string(t.data<int64_t>()[i]);
    case DType::Bool:
      return t.data<uint8_t>()[i] ? "true" : "false";
    case DType::Float64:
      return float64_text(t.data<double>()[i]);
    case DType::Int16:
      return std::to_string(t.data<int16_t>()[i]);
    case DType::UInt16:
      return std::to_string(t.data<uint16_t>()[i]);
    case DType::UInt32:
      return std::to_string(t.data<uint32_t>()[i]);
    case DType::UInt64:
      return std::to_string(t.data<uint64_t>()[i]);
    case DType::BFloat16:  // every bfloat16 is exactly a float, and parsing goes through float
      return float32_text(bfloat16_to_float(t.data<uint16_t>()[i]));
  }
  return "?";
}

std::string constant_text(const ConstantNode& c) {
  std::string s = "const(" + type_str(c.type) + ", ";
  if (!c.name.empty()) return s + quote_string(c.name) + ")";
  s += "[";
  for (int64_t i = 0; i < c.value.numel(); ++i) s += (i ? ", " : "") + element_text(c.value, i);
  return s + "])";
}

class Printer {
 public:
  // Gives v a unique printable name (its own when possible).
  std::string define(const Var& v) {
    std::string base = is_plain_name(v->name, false) ? v->name : sanitize(v->name);
    std::string name = base;
    for (int n = 1; used_.count(name); ++n) name = base + "_" + std::to_string(n);
    used_.insert(name);
    names_[v.get()] = name;
    return "%" + name;
  }

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Var: {
        auto* v = static_cast<const VarNode*>(e.get());
        auto it = names_.find(v);
        if (it != names_.end()) return "%" + it->second;
        return "%" + (is_plain_name(v->name, false) ? v->name : quote_string(v->name));
      }
      case ExprKind::Constant:
        return constant_text(*as<ConstantNode>(e));
      case ExprKind::Call: {
        auto* c = as<CallNode>(e);
        std::string s = c->is_op_call() ? c->op->name : global_name(c->callee);
        s += "(";
        bool first = true;
        for (const auto& a : c->args) {
          s += (first ? "" : ", ") + expr(a);
          first = false;
        }
        // All attributes, normalised and sorted by name (as CallNode stores them).
        for (const auto& [k, v] : c->attrs.items()) {
          s += (first ? "" : ", ") + attr_key(k) + "=" + attr_value_str(v);
          first = false;
        }
        return s + ")";
      }
      case ExprKind::Tuple: {
        auto* t = as<TupleNode>(e);
        std::string s = "(";
        for (size_t i = 0; i < t->fields.size(); ++i) s += (i ? ", " : "") + expr(t->fields[i]);
        if (t->fields.size() == 1) s += ",";
        return s + ")";
      }
      case ExprKind::TupleGetItem: {
        auto* g = as<TupleGetItemNode>(e);
        std::string inner = expr(g->tuple);
        // A call's text ends in ')' and a tuple's too: both read back as a
        // primary followed by '.N'. Anything else is already a primary.
        return inner + "." + std::to_string(g->index);
      }
    }
    return "?";
  }

  std::string function(const FunctionNode& f) {
    std::string s = "def " + global_name(f.name) + "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      s += (i ? ", " : "") + define(f.params[i]) + ": " + type_str(f.params[i]->type);
    s += ") -> " + type_str(f.ret_type);
    if (!f.attrs.empty()) s += " attrs " + attrs_block(f.attrs);
    s += " {\n";
    for (const auto& b : f.bindings) {
      // The value first: it may refer to an older variable of the same name.
      std::string value = expr(b.value);
      s += "  " + define(b.var) + " = " + value + "\n";
    }
    s += "  return " + expr(f.result) + "\n}\n";
    return s;
  }

 private:
  static std::string sanitize(const std::string& name) {
    std::string s;
    for (char c : name) s += is_plain_name(std::string(1, c), false) ? c : '_';
    return s.empty() ? "v" : s;
  }

  std::unordered_map<const VarNode*, std::string> names_;
  std::set<std::string> used_;
};

}  // namespace

std::string print_function(const FunctionNode& f) { return Printer().function(f); }

std::string print_expr(const Expr& e) { return Printer().expr(e); }

std::string print_module(const Module& m) {
  std::string s;
  if (!m.attrs.empty()) s += "module attrs " + attrs_block(m.attrs) + "\n";
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (!s.empty()) s += "\n";
    s += print_function(*m.functions[i]);
  }
  for (const auto& f : m.prim_functions) {
    if (!s.empty()) s += "\n";
    s += tir::print_prim_func(*f);
  }
  return s;
}

}  // namespace kiln
