// Pattern builders, printing and the matcher (which only reads the IR).
#include "pattern/pattern.h"

#include <algorithm>

namespace kiln {

namespace {

Pattern make(PatternNode n) { return std::make_shared<const PatternNode>(std::move(n)); }

}  // namespace

Pattern is_op(const std::string& op, std::vector<Pattern> args, Attrs attrs) {
  const OpDef* def = find_op(op);
  KILN_CHECK(def != nullptr, "pattern: unknown op '", op, "'; `kiln ops` lists the known ops");
  for (const auto& [name, value] : attrs.items()) {
    bool known = false;
    for (const auto& spec : def->attrs) known = known || spec.name == name;
    KILN_CHECK(known, "pattern: op ", op, " has no attribute '", name, "'");
  }
  for (const auto& a : args) KILN_CHECK(a != nullptr, "pattern: null argument pattern of ", op);
  PatternNode n;
  n.kind = PatternNode::Kind::Op;
  n.op = op;
  n.args = std::move(args);
  n.attrs = std::move(attrs);
  return make(std::move(n));
}

Pattern wildcard() { return make(PatternNode{}); }

Pattern is_constant() {
  PatternNode n;
  n.kind = PatternNode::Kind::Constant;
  return make(std::move(n));
}

Pattern alternatives(std::vector<Pattern> choices) {
  KILN_CHECK(!choices.empty(), "pattern: alternatives need at least one choice");
  PatternNode n;
  n.kind = PatternNode::Kind::Alternatives;
  n.args = std::move(choices);
  return make(std::move(n));
}

Pattern optional_op(Pattern op_pattern) {
  KILN_CHECK(op_pattern && op_pattern->kind == PatternNode::Kind::Op && !op_pattern->args.empty(),
             "pattern: optional_op needs an op pattern with at least one argument");
  PatternNode n;
  n.kind = PatternNode::Kind::Optional;
  n.inner = std::move(op_pattern);
  return make(std::move(n));
}

Pattern annotate(const std::string& name, Pattern inner) {
  KILN_CHECK(!name.empty() && inner != nullptr, "pattern: annotate needs a name and a pattern");
  PatternNode n;
  n.kind = PatternNode::Kind::Annotated;
  n.annotation = name;
  n.inner = std::move(inner);
  return make(std::move(n));
}

std::string pattern_str(const Pattern& p) {
  switch (p->kind) {
    case PatternNode::Kind::Wildcard:
      return "*";
    case PatternNode::Kind::Constant:
      return "const";
    case PatternNode::Kind::Op: {
      std::string s = p->op + "(";
      for (size_t i = 0; i < p->args.size(); ++i) s += (i ? ", " : "") + pattern_str(p->args[i]);
      for (const auto& [k, v] : p->attrs.items()) s += ", " + k + "=" + attr_value_str(v);
      return s + ")";
    }
    case PatternNode::Kind::Alternatives: {
      std::string s = "(";
      for (size_t i = 0; i < p->args.size(); ++i) s += (i ? " | " : "") + pattern_str(p->args[i]);
      return s + ")";
    }
    case PatternNode::Kind::Optional:
      return pattern_str(p->inner) + "?";
    case PatternNode::Kind::Annotated:
      return p->annotation + ":" + pattern_str(p->inner);
  }
  return "?";
}

static void collect_annotations(const Pattern& p, std::vector<std::string>& out) {
  if (p->kind == PatternNode::Kind::Annotated &&
      std::find(out.begin(), out.end(), p->annotation) == out.end())
    out.push_back(p->annotation);
  if (p->inner) collect_annotations(p->inner, out);
  for (const auto& a : p->args) collect_annotations(a, out);
}

std::vector<std::string> pattern_annotations(const Pattern& p) {
  std::vector<std::string> out;
  collect_annotations(p, out);
  return out;
}

std::vector<const CallNode*> Match::calls() const {
  std::vector<const CallNode*> out;
  for (const Binding* b : bindings) out.push_back(as<CallNode>(b->value));
  return out;
}

const CallNode* Match::find_call(const std::string& op) const {
  for (const CallNode* c : calls())
    if (c->op->name == op) return c;
  return nullptr;
}

Expr Match::first(const std::string& name) const {
  auto it = annotated.find(name);
  return it == annotated.end() || it->second.empty() ? nullptr : it->second.front();
}

BindingIndex::BindingIndex(const FunctionNode& f) : fn_(f) {
  for (const auto& b : f.bindings) by_var_[b.var.get()] = &b;
}

const Binding* BindingIndex::producer(const Expr& var) const {
  auto it = by_var_.find(var.get());
  return it == by_var_.end() ? nullptr : it->second;
}

size_t BindingIndex::position(const Binding* b) const { return static_cast<size_t>(b - fn_.bindings.data()); }

namespace {

// The matcher's state; alternatives try a copy and keep it on success.
struct MatchState {
  std::vector<const Binding*> bindings;
  std::vector<Expr> inputs;
  std::vector<Expr> constants;
  std::map<std::string, std::vector<Expr>> annotated;
};

void add_unique(std::vector<Expr>& xs, const Expr& e) {
  if (std::find(xs.begin(), xs.end(), e) == xs.end()) xs.push_back(e);
}

bool attrs_satisfied(const Attrs& required, const Attrs& given) {
  for (const auto& [name, want] : required.items()) {
    const AttrValue* have = given.find(name);
    if (!have || !(*have == want)) return false;
  }
  return true;
}

bool match_expr(const Pattern& p, const Expr& e, const Binding* self, const BindingIndex& index,
                MatchState& st);

// Matches an op pattern against the call bound by binding `b`.
bool match_op(const PatternNode& p, const Binding& b, const BindingIndex& index, MatchState& st) {
  const CallNode* call = as<CallNode>(b.value);
  if (!call || !call->is_op_call() || call->op->name != p.op) return false;
  if (call->args.size() != p.args.size() || !attrs_satisfied(p.attrs, call->attrs)) return false;
  for (size_t i = 0; i < p.args.size(); ++i)
    if (!match_expr(p.args[i], call->args[i], nullptr, index, st)) return false;
  if (std::find(st.bindings.begin(), st.bindings.end(), &b) == st.bindings.end()) st.bindings.push_back(&b);
  return true;
}

// `self` is the binding when `e` is the root binding's variable.
bool match_expr(const Pattern& p, const Expr& e, const Binding* self, const BindingIndex& index,
                MatchState& st) {
  switch (p->kind) {
    case PatternNode::Kind::Wildcard:
      add_unique(st.inputs, e);
      return true;
    case PatternNode::Kind::Constant:
      if (!as<ConstantNode>(e)) return false;
      add_unique(st.constants, e);
      return true;
    case PatternNode::Kind::Op: {
      const Binding* b = self ? self : (as<VarNode>(e) ? index.producer(e) : nullptr);
      return b && match_op(*p, *b, index, st);
    }
    case PatternNode::Kind::Alternatives:
      for (const auto& choice : p->args) {
        MatchState trial = st;
        if (match_expr(choice, e, self, index, trial)) {
          st = std::move(trial);
          return true;
        }
      }
      return false;
    case PatternNode::Kind::Optional: {
      MatchState trial = st;
      if (match_expr(p->inner, e, self, index, trial)) {
        st = std::move(trial);
        return true;
      }
      return match_expr(p->inner->args[0], e, self, index, st);
    }
    case PatternNode::Kind::Annotated:
      if (!match_expr(p->inner, e, self, index, st)) return false;
      st.annotated[p->annotation].push_back(e);
      return true;
  }
  return false;
}

}  // namespace

std::optional<Match> match_pattern(const Pattern& pattern, const Binding& root, const BindingIndex& index) {
  MatchState st;
  if (!match_expr(pattern, root.var, &root, index, st)) return std::nullopt;
  // A pattern whose top is a wildcard would claim no op: not a match.
  if (st.bindings.empty()) return std::nullopt;
  Match m;
  m.root = &root;
  m.bindings = std::move(st.bindings);
  std::sort(m.bindings.begin(), m.bindings.end(),
            [&](const Binding* a, const Binding* b) { return index.position(a) < index.position(b); });
  // The top op must be the root binding itself (an Optional may have skipped it).
  if (m.bindings.back() != &root) return std::nullopt;
  m.inputs = std::move(st.inputs);
  m.constants = std::move(st.constants);
  m.annotated = std::move(st.annotated);
  return m;
}

}  // namespace kiln
