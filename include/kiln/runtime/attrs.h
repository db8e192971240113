// Op attributes: a sorted map from name to a small value.
//
// Attributes are plain data shared by the IR (keyword arguments in the text
// format), the reference kernels, the backend graph format and the runtime.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kiln {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

// Kinds in the order of AttrValue's alternatives.
enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats };

inline AttrKind attr_kind(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }
const char* attr_kind_name(AttrKind k);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue value) { map_[name] = std::move(value); }
  const AttrValue* find(const std::string& name) const;

  // Typed getters. They throw kiln::Error naming the attribute when it is
  // missing or of another kind. An Int is accepted where a Float is asked for.
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  std::vector<double> get_floats(const std::string& name) const;

  const std::map<std::string, AttrValue>& items() const { return map_; }
  bool empty() const { return map_.empty(); }
  size_t size() const { return map_.size(); }

  bool operator==(const Attrs& o) const { return map_ == o.map_; }
  bool operator!=(const Attrs& o) const { return !(*this == o); }

 private:
  std::map<std::string, AttrValue> map_;
};

// Text of one value as the IR text format writes it: 3, 0.5, "linear", [1, 2],
// [0.5, 1.0]. Floats always carry a '.' or an exponent so they read back as
// floats; they print with enough digits to round-trip exactly.
std::string attr_value_str(const AttrValue& v);

// A string literal as the text formats write it: "..." with \" \\ \n \t escaped.
std::string quote_string(const std::string& s);

}  // namespace kiln
