// Lowering graph functions to kiln.graph.
#include "backends/graph_codegen.h"

#include <set>
#include <unordered_map>

namespace kiln {
namespace {

class Lowerer {
 public:
  Lowerer(const Module& m, const std::string& graph_name, GraphLowering& state) : module_(m), state_(state) {
    graph_.name = graph_name;
  }

  Graph run(const FunctionNode& f) {
    std::unordered_map<const ExprNode*, std::vector<std::string>> env;
    for (const auto& p : f.params) {
      KILN_CHECK(p->type->is_tensor(), "@", f.name, ": parameter %", p->name,
                 " has a tuple type; graphs take tensor inputs only");
      std::string name = fresh(p->name);
      graph_.inputs.push_back({name, p->type->tensor});
      env[p.get()] = {name};
    }
    graph_.outputs = lower_body(f, env, -1, "");
    return std::move(graph_);
  }

 private:
  std::string fresh(const std::string& want) {
    std::string name = want.empty() ? "v" : want;
    for (int i = 1; used_.count(name); ++i) name = want + "." + std::to_string(i);
    used_.insert(name);
    return name;
  }

  std::vector<std::string> lower_body(const FunctionNode& f,
                                      std::unordered_map<const ExprNode*, std::vector<std::string>>& env,
                                      int64_t group, const std::string& pattern) {
    for (const auto& b : f.bindings) env[b.var.get()] = lower_value(b, env, group, pattern);
    return atom(f.result, env);
  }

  std::vector<std::string> atom(const Expr& e,
                                std::unordered_map<const ExprNode*, std::vector<std::string>>& env) {
    if (const auto* c = as<ConstantNode>(e)) return {constant(e, *c)};
    if (const auto* t = as<TupleNode>(e)) {
      std::vector<std::string> out;
      for (const auto& f : t->fields)
        for (auto& n : atom(f, env)) out.push_back(n);
      return out;
    }
    if (const auto* g = as<TupleGetItemNode>(e)) {
      std::vector<std::string> all = atom(g->tuple, env);
      size_t begin = 0;
      for (int64_t i = 0; i < g->index; ++i) begin += flatten_type(g->tuple->type->fields[i]).size();
      size_t count = flatten_type(e->type).size();
      return {all.begin() + begin, all.begin() + begin + count};
    }
    auto it = env.find(e.get());
    KILN_ASSERT(it != env.end(), "graph lowering: value used before definition");
    return it->second;
  }

  std::string constant(const Expr& e, const ConstantNode& c) {
    auto known = constant_names_.find(e.get());
    if (known != constant_names_.end()) return known->second;
    std::string name = c.name;
    for (size_t i = state_.constants.size(); name.empty() || (c.name.empty() && state_.constants.count(name));
         ++i)
      name = graph_.name + ".const" + std::to_string(i);
    state_.constants[name] = c.value;
    constant_names_[e.get()] = name;
    graph_.constants.push_back({name, {c.value.shape(), c.value.dtype()}});
    used_.insert(name);
    return name;
  }

  std::vector<GraphValue> outputs_for(const std::string& base, const Type& t) {
    std::vector<TensorDesc> descs = flatten_type(t);
    std::vector<GraphValue> out;
    for (size_t i = 0; i < descs.size(); ++i)
      out.push_back({fresh(t->is_tuple() ? base + "." + std::to_string(i) : base), descs[i]});
    return out;
  }

  std::vector<std::string> lower_value(const Binding& b,
                                       std::unordered_map<const ExprNode*, std::vector<std::string>>& env,
                                       int64_t group, const std::string& pattern) {
    const CallNode* call = as<CallNode>(b.value);
    if (!call) return atom(b.value, env);
    std::vector<std::string> inputs;
    for (const auto& a : call->args)
      for (auto& n : atom(a, env)) inputs.push_back(n);
    if (call->is_op_call()) {
      GraphNode n;
      n.op = call->op->name;
      n.inputs = std::move(inputs);
      n.outputs = outputs_for(b.var->name, b.var->type);
      n.name = n.outputs.empty() ? fresh(b.var->name) : n.outputs[0].name;
      n.attrs = call->attrs;
      n.group = group;
      n.pattern = pattern;
      return emit(std::move(n));
    }
    const FunctionNode* callee = module_.find(call->callee);
    KILN_CHECK(callee != nullptr, "graph lowering: call of unknown function @", call->callee);
    if (callee->attrs.has("Codegen")) {
      GraphNode n;
      n.callee =
          callee->attrs.has("global_symbol") ? callee->attrs.get_string("global_symbol") : callee->name;
      n.inputs = std::move(inputs);
      n.outputs = outputs_for(b.var->name, b.var->type);
      n.name = n.outputs.empty() ? fresh(b.var->name) : n.outputs[0].name;
      return emit(std::move(n));
    }
    // Inline a composite (or any helper) function.
    std::unordered_map<const ExprNode*, std::vector<std::string>> inner;
    size_t at = 0;
    for (const auto& p : callee->params) {
      size_t count = flatten_type(p->type).size();
      inner[p.get()] = {inputs.begin() + at, inputs.begin() + at + count};
      at += count;
    }
    int64_t inner_group = group;
    std::string inner_pattern = pattern;
    if (callee->attrs.has("Composite")) {
      inner_group = next_group_++;
      inner_pattern = callee->attrs.get_string("Composite");
    }
    return lower_body(*callee, inner, inner_group, inner_pattern);
  }

  std::vector<std::string> emit(GraphNode n) {
    std::vector<std::string> names;
    for (const auto& o : n.outputs) names.push_back(o.name);
    graph_.nodes.push_back(std::move(n));
    return names;
  }

  const Module& module_;
  GraphLowering& state_;
  Graph graph_;
  std::set<std::string> used_;
  std::unordered_map<const ExprNode*, std::string> constant_names_;
  int64_t next_group_ = 0;
};

}  // namespace

Graph lower_to_graph(const Module& m, const FunctionNode& f, const std::string& graph_name,
                     GraphLowering& state) {
  return Lowerer(m, graph_name, state).run(f);
}

}  // namespace kiln
