// The pattern language for offloading: what a backend claims.
//
// A pattern describes a small dataflow graph rooted at one op call:
//
//   auto conv = is_op("nn.conv2d", {annotate("input", wildcard()),
//                                   annotate("weight", is_constant())});
//   auto fused = annotate("root", is_op("nn.relu", {conv}));
//
// Kinds: an op (with optional required attribute values), a wildcard (any
// expression, which becomes an input of the offloaded function), a constant,
// alternatives (the first that matches wins), an optional op (matches the op
// or, when it is absent, its first argument's pattern) and an annotated
// sub-pattern (the match records the bound expression under the name).
//
// Matching never mutates anything: match_pattern() reads a function's
// bindings and returns what it bound, or nothing.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln {

struct PatternNode;
using Pattern = std::shared_ptr<const PatternNode>;

struct PatternNode {
  enum class Kind : uint8_t { Op, Wildcard, Constant, Alternatives, Optional, Annotated };
  Kind kind = Kind::Wildcard;
  std::string op;             // Op: the op's name
  Attrs attrs;                // Op: attribute values the call must have
  std::vector<Pattern> args;  // Op: one per argument; Alternatives: the choices
  Pattern inner;              // Optional, Annotated
  std::string annotation;     // Annotated: "root", "input", "weight", ...
};

// Builders. is_op checks the op exists and throws kiln::Error otherwise.
Pattern is_op(const std::string& op, std::vector<Pattern> args, Attrs attrs = {});
Pattern wildcard();
Pattern is_constant();
Pattern alternatives(std::vector<Pattern> choices);
// `op_pattern` must be an op pattern with at least one argument: matches the op
// call, or when that fails, the op's first argument pattern alone.
Pattern optional_op(Pattern op_pattern);
Pattern annotate(const std::string& name, Pattern inner);

// "is_op(nn.relu, is_op(nn.conv2d, *, const))" for listings.
std::string pattern_str(const Pattern& p);
// The annotation names used in a pattern, in first-use order.
std::vector<std::string> pattern_annotations(const Pattern& p);

// What a successful match bound.
struct Match {
  const Binding* root = nullptr;                       // the binding whose value the pattern's top matched
  std::vector<const Binding*> bindings;                // matched op bindings, in function order
  std::vector<Expr> inputs;                            // expressions bound by wildcards, in first-use order
  std::vector<Expr> constants;                         // constants bound by is_constant, in first-use order
  std::map<std::string, std::vector<Expr>> annotated;  // annotation -> bound expressions

  // The op calls of the match in function order (for checks).
  std::vector<const CallNode*> calls() const;
  // The first matched call of `op`, or nullptr.
  const CallNode* find_call(const std::string& op) const;
  // The first expression annotated `name`, or nullptr.
  Expr first(const std::string& name) const;
};

// Looks up which binding defines each variable of a function, for matching.
class BindingIndex {
 public:
  explicit BindingIndex(const FunctionNode& f);
  // The binding defining `var`, or nullptr (parameters, unknown).
  const Binding* producer(const Expr& var) const;
  size_t position(const Binding* b) const;  // index in the function's bindings

 private:
  const FunctionNode& fn_;
  std::map<const ExprNode*, const Binding*> by_var_;
};

// Tries `pattern` with its top at binding `root` of `fn`. Only op calls bound
// to variables are looked through; a Var that is a parameter or any other
// expression can match a wildcard only.
std::optional<Match> match_pattern(const Pattern& pattern, const Binding& root, const BindingIndex& index);

}  // namespace kiln
