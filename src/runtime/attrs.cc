#include "kiln/runtime/attrs.h"

#include <cmath>
#include <cstdio>

#include "kiln/runtime/error.h"

namespace kiln {

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return "int";
    case AttrKind::Float:
      return "float";
    case AttrKind::String:
      return "string";
    case AttrKind::Ints:
      return "list of ints";
    case AttrKind::Floats:
      return "list of floats";
  }
  return "?";
}

const AttrValue* Attrs::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

static const AttrValue& require(const Attrs& a, const std::string& name) {
  const AttrValue* v = a.find(name);
  if (!v) throw Error("missing attribute '" + name + "'");
  return *v;
}

static Error kind_error(const std::string& name, const AttrValue& v, AttrKind want) {
  return Error("attribute '" + name + "' is a " + attr_kind_name(attr_kind(v)) + ", expected a " +
               attr_kind_name(want));
}

int64_t Attrs::get_int(const std::string& name) const {
  const AttrValue& v = require(*this, name);
  if (auto* p = std::get_if<int64_t>(&v)) return *p;
  throw kind_error(name, v, AttrKind::Int);
}

double Attrs::get_float(const std::string& name) const {
  const AttrValue& v = require(*this, name);
  if (auto* p = std::get_if<double>(&v)) return *p;
  if (auto* p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  throw kind_error(name, v, AttrKind::Float);
}

const std::string& Attrs::get_string(const std::string& name) const {
  const AttrValue& v = require(*this, name);
  if (auto* p = std::get_if<std::string>(&v)) return *p;
  throw kind_error(name, v, AttrKind::String);
}

const std::vector<int64_t>& Attrs::get_ints(const std::string& name) const {
  const AttrValue& v = require(*this, name);
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  throw kind_error(name, v, AttrKind::Ints);
}

std::vector<double> Attrs::get_floats(const std::string& name) const {
  const AttrValue& v = require(*this, name);
  if (auto* p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(p->begin(), p->end());
  throw kind_error(name, v, AttrKind::Floats);
}

static std::string float_str(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // Use the shortest form that reads back exactly.
  for (int prec = 1; prec <= 17; ++prec) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*g", prec, d);
    if (std::strtod(b, nullptr) == d) {
      std::snprintf(buf, sizeof buf, "%s", b);
      break;
    }
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string attr_value_str(const AttrValue& v) {
  switch (attr_kind(v)) {
    case AttrKind::Int:
      return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float:
      return float_str(std::get<double>(v));
    case AttrKind::String:
      return quote_string(std::get<std::string>(v));
    case AttrKind::Ints: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<int64_t>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
      return s + "]";
    }
    case AttrKind::Floats: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<double>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + float_str(xs[i]);
      return s + "]";
    }
  }
  return "";
}

}  // namespace kiln
