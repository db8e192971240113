// MergeCompositeFunctions: adjacent composites of one backend become one
// offloaded function (a region), without ever creating a cycle.
//
// Requires: calls of composite functions (from FuseOpsByPattern).
// Guarantees: every composite call is inside exactly one region function
// @<backend>_<function>_<k> with Codegen and global_symbol; the composites
// keep Composite and Primitive only. Regions with fewer ops than
// min_region_size are inlined back (the ops return to the host).
//
// Algorithm. Bindings are visited in order. A composite call joins the region
// of each producer of one of its arguments that belongs to the same backend,
// unless contracting the two regions into one node would close a cycle: that
// is the case exactly when some path leaves one of them and comes back into
// either, through a node outside both. A breadth-first walk from the
// successors outside the union finds such a path.
//
//     A (npu) ----> H (host) ----> B (npu)         A and B may not merge: the
//       \_________________________/^               region {A, B} would feed H
//                                                  and depend on H.
//
// The rewritten function lists host bindings and region calls in a stable
// topological order (each item placed by its first original position).
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/visitor.h"
#include "transform/partition.h"

namespace kiln {
namespace {

int64_t count_ops(const FunctionNode& f) {
  int64_t n = 0;
  for (const auto& b : f.bindings)
    if (const auto* c = as<CallNode>(b.value); c && c->is_op_call()) ++n;
  return n;
}

class Merger {
 public:
  Merger(const Module& m, const PartitionOptions& opts, PartitionReport* report)
      : in_(m), opts_(opts), report_(report) {}

  Module run() {
    Module out = in_;
    for (const auto& f : in_.functions)
      if (is_partitionable(*f)) out.set(merge_function(*f));
    // Composites now live inside regions: drop their own Codegen marks, and
    // drop the composites that were inlined back.
    std::set<std::string> called;
    for (const auto& f : out.functions)
      for (const auto& b : f->bindings)
        if (const auto* c = as<CallNode>(b.value); c && !c->is_op_call()) called.insert(c->callee);
    for (const auto& f : new_functions_) {
      for (const auto& b : f->bindings) called.insert(as<CallNode>(b.value)->callee);
      out.functions.push_back(f);
    }
    std::vector<Function> kept;
    for (const auto& f : out.functions) {
      if (!f->attrs.has("Composite")) {
        kept.push_back(f);
        continue;
      }
      if (!called.count(f->name)) continue;
      auto g = std::make_shared<FunctionNode>(*f);
      Attrs attrs;
      for (const auto& [k, v] : f->attrs.items())
        if (k != "Codegen" && k != "global_symbol") attrs.set(k, v);
      g->attrs = attrs;
      kept.push_back(g);
    }
    out.functions = std::move(kept);
    return out;
  }

 private:
  const FunctionNode* composite_of(const Binding& b) const {
    const auto* c = as<CallNode>(b.value);
    if (!c || c->is_op_call()) return nullptr;
    const FunctionNode* fn = in_.find(c->callee);
    return fn && fn->attrs.has("Composite") ? fn : nullptr;
  }

  static std::string backend_of(const FunctionNode& composite) {
    const std::string& name = composite.attrs.get_string("Composite");
    return name.substr(0, name.find('.'));
  }

  // Would contracting regions a and b into one node close a cycle?
  bool creates_cycle(int a, int b) const {
    std::vector<bool> in_union(n_, false), seen(n_, false);
    for (size_t i = 0; i < n_; ++i) in_union[i] = region_[i] == a || region_[i] == b;
    std::vector<size_t> stack;
    for (size_t i = 0; i < n_; ++i)
      if (in_union[i])
        for (size_t s : succs_[i])
          if (!in_union[s] && !seen[s]) seen[s] = true, stack.push_back(s);
    while (!stack.empty()) {
      size_t i = stack.back();
      stack.pop_back();
      for (size_t s : succs_[i]) {
        if (in_union[s]) return true;
        if (!seen[s]) seen[s] = true, stack.push_back(s);
      }
    }
    return false;
  }

  void note(const FunctionNode& f, size_t i, const std::string& text) {
    if (!report_) return;
    const FunctionNode* comp = composite_of(f.bindings[i]);
    for (size_t j = 0; j < comp->bindings.size(); ++j) {
      // The composite's last binding is the call's variable in `f`.
      bool last = j + 1 == comp->bindings.size();
      if (OpDecision* d = report_->find(f.name, last ? f.bindings[i].var->name : comp->bindings[j].var->name))
        d->notes.push_back(text);
    }
  }

  Function merge_function(const FunctionNode& f) {
    n_ = f.bindings.size();
    demoted_.clear();
    std::map<const ExprNode*, size_t> producer;
    for (size_t i = 0; i < n_; ++i) producer[f.bindings[i].var.get()] = i;
    preds_.assign(n_, {});
    succs_.assign(n_, {});
    for (size_t i = 0; i < n_; ++i) {
      std::vector<const ExprNode*> used;
      collect_used_vars(f.bindings[i].value, used);
      for (const ExprNode* v : used) {
        auto it = producer.find(v);
        if (it == producer.end()) continue;
        if (std::find(preds_[i].begin(), preds_[i].end(), it->second) == preds_[i].end()) {
          preds_[i].push_back(it->second);
          succs_[it->second].push_back(i);
        }
      }
    }
    std::vector<std::string> backend(n_);
    region_.assign(n_, -1);
    for (size_t i = 0; i < n_; ++i)
      if (const FunctionNode* c = composite_of(f.bindings[i])) {
        backend[i] = backend_of(*c);
        region_[i] = static_cast<int>(i);
      }
    for (size_t i = 0; i < n_; ++i) {
      if (backend[i].empty()) continue;
      for (size_t p : preds_[i]) {
        if (backend[p] != backend[i] || region_[p] == region_[i]) continue;
        if (creates_cycle(region_[p], region_[i])) {
          note(f, i,
               "merge with the region of %" + f.bindings[p].var->name + " refused: would create a cycle");
          continue;
        }
        int from = region_[i], to = region_[p];
        for (auto& r : region_)
          if (r == from) r = to;
      }
    }
    return rebuild(f, backend);
  }

  Function rebuild(const FunctionNode& f, const std::vector<std::string>& backend) {
    std::map<int, std::vector<size_t>> members;
    for (size_t i = 0; i < n_; ++i)
      if (region_[i] >= 0) members[region_[i]].push_back(i);
    // Items of the new function: a host binding, or a whole region.
    struct Item {
      size_t first;
      std::vector<size_t> nodes;
      bool region;
    };
    std::vector<Item> items;
    std::vector<int> item_of(n_, -1);
    for (size_t i = 0; i < n_; ++i) {
      if (region_[i] >= 0 && members[region_[i]].front() != i) continue;
      Item it{i, region_[i] >= 0 ? members[region_[i]] : std::vector<size_t>{i}, region_[i] >= 0};
      if (it.region) {
        int64_t ops = 0;
        for (size_t k : it.nodes) ops += count_ops(*composite_of(f.bindings[k]));
        if (ops < opts_.min_region_size) {
          for (size_t k : it.nodes) {
            Item single{k, {k}, false};
            demoted_.insert(k);
            for (size_t x : single.nodes) item_of[x] = static_cast<int>(items.size());
            items.push_back(single);
          }
          demote_note(f, it.nodes, ops);
          continue;
        }
      }
      for (size_t k : it.nodes) item_of[k] = static_cast<int>(items.size());
      items.push_back(it);
    }
    // Stable topological order over items.
    std::vector<std::set<int>> deps(items.size());
    for (size_t i = 0; i < n_; ++i)
      for (size_t p : preds_[i])
        if (item_of[p] != item_of[i]) deps[item_of[i]].insert(item_of[p]);
    std::vector<bool> done(items.size(), false);
    std::vector<Binding> bindings;
    for (size_t emitted = 0; emitted < items.size(); ++emitted) {
      int pick = -1;
      for (size_t k = 0; k < items.size() && pick < 0; ++k) {
        if (done[k]) continue;
        bool ready = std::all_of(deps[k].begin(), deps[k].end(), [&](int d) { return done[d]; });
        if (ready) pick = static_cast<int>(k);
      }
      KILN_ASSERT(pick >= 0, "merged regions form a cycle");
      done[pick] = true;
      const Item& it = items[pick];
      if (!it.region) {
        if (demoted_.count(it.first))
          inline_composite(f.bindings[it.first], bindings);
        else
          bindings.push_back(f.bindings[it.first]);
        continue;
      }
      emit_region(f, backend[it.first], it.nodes, bindings);
    }
    return make_function(f.name, f.params, std::move(bindings), f.result, f.attrs, f.ret_type);
  }

  void demote_note(const FunctionNode& f, const std::vector<size_t>& nodes, int64_t ops) {
    std::vector<std::string> list;
    for (size_t k : nodes) {
      const FunctionNode* comp = composite_of(f.bindings[k]);
      for (size_t j = 0; j < comp->bindings.size(); ++j) {
        std::string var =
            j + 1 == comp->bindings.size() ? f.bindings[k].var->name : comp->bindings[j].var->name;
        std::string reason = "region below the minimum size (" + std::to_string(ops) + " < " +
                             std::to_string(opts_.min_region_size) + " ops)";
        list.push_back("  %" + var + " = " + as<CallNode>(comp->bindings[j].value)->op->name + ": " + reason);
        if (!report_) continue;
        if (OpDecision* d = report_->find(f.name, var)) {
          d->backend.clear();
          d->pattern.clear();
          d->region.clear();
          d->reason = reason;
        }
      }
    }
    if (opts_.strict) {
      std::string text;
      for (const auto& l : list) text += "\n" + l;
      throw Error("strict partitioning: " + std::to_string(list.size()) + " op(s) of @" + f.name +
                  " would fall back to the host:" + text);
    }
  }

  // Puts a composite's body back in place of its call.
  void inline_composite(const Binding& call_binding, std::vector<Binding>& out) {
    const auto* call = as<CallNode>(call_binding.value);
    const FunctionNode* comp = in_.find(call->callee);
    std::map<const ExprNode*, Expr> subst;
    for (size_t i = 0; i < comp->params.size(); ++i) subst[comp->params[i].get()] = call->args[i];
    for (size_t j = 0; j < comp->bindings.size(); ++j) {
      const auto* c = as<CallNode>(comp->bindings[j].value);
      std::vector<Expr> args;
      for (const auto& a : c->args) {
        auto it = subst.find(a.get());
        args.push_back(it == subst.end() ? a : it->second);
      }
      Expr value = rebuild_call(*c, std::move(args), &in_);
      bool last = j + 1 == comp->bindings.size();
      Var v = last ? call_binding.var : make_var(comp->bindings[j].var->name, value->type);
      subst[comp->bindings[j].var.get()] = v;
      out.push_back({v, value});
    }
  }

  void emit_region(const FunctionNode& f, const std::string& backend, const std::vector<size_t>& nodes,
                   std::vector<Binding>& out) {
    std::set<const ExprNode*> inside;
    for (size_t k : nodes) inside.insert(f.bindings[k].var.get());
    // Parameters: values used inside but defined outside, in first-use order.
    std::vector<Expr> args;
    std::map<const ExprNode*, Expr> subst;
    std::vector<Var> params;
    std::set<std::string> names;
    for (size_t k : nodes) names.insert(f.bindings[k].var->name);
    for (size_t k : nodes) {
      for (const auto& a : as<CallNode>(f.bindings[k].value)->args) {
        if (inside.count(a.get()) || subst.count(a.get()) || as<ConstantNode>(a)) continue;
        std::string base = as<VarNode>(a) ? as<VarNode>(a)->name : "arg";
        std::string name = base;
        for (int i = 1; names.count(name); ++i) name = base + "_" + std::to_string(i);
        names.insert(name);
        Var p = make_var(name, a->type);
        params.push_back(p);
        args.push_back(a);
        subst[a.get()] = p;
      }
    }
    // Outputs: member values used after the region or returned.
    std::vector<size_t> outputs;
    std::set<size_t> member_set(nodes.begin(), nodes.end());
    std::vector<const ExprNode*> result_vars;
    collect_used_vars(f.result, result_vars);
    for (size_t k : nodes) {
      bool used_outside =
          std::find(result_vars.begin(), result_vars.end(), f.bindings[k].var.get()) != result_vars.end();
      for (size_t s : succs_[k]) used_outside = used_outside || !member_set.count(s);
      if (used_outside) outputs.push_back(k);
    }
    std::vector<Binding> body;
    for (size_t k : nodes) {
      const auto* c = as<CallNode>(f.bindings[k].value);
      std::vector<Expr> new_args;
      for (const auto& a : c->args) {
        auto it = subst.find(a.get());
        new_args.push_back(it == subst.end() ? a : it->second);
      }
      Expr value = rebuild_call(*c, std::move(new_args), &in_);
      Var v = make_var(f.bindings[k].var->name, value->type);
      subst[f.bindings[k].var.get()] = v;
      body.push_back({v, value});
    }
    Expr result;
    if (outputs.size() == 1) {
      result = subst[f.bindings[outputs[0]].var.get()];
    } else {
      std::vector<Expr> fields;
      for (size_t k : outputs) fields.push_back(subst[f.bindings[k].var.get()]);
      result = make_tuple(fields);
    }
    std::string name = unique_function_name(in_, backend + "_" + f.name, taken_);
    Function fn = make_function(name, params, std::move(body), result,
                                Attrs{{"Codegen", backend}, {"global_symbol", name}});
    new_functions_.push_back(fn);
    std::vector<Type> param_types;
    for (const auto& p : params) param_types.push_back(p->type);
    Expr call = make_function_call(name, param_types, fn->ret_type, std::move(args));
    if (outputs.size() == 1) {
      out.push_back({f.bindings[outputs[0]].var, call});
    } else {
      Var tuple = make_var(name + "_out", call->type);
      out.push_back({tuple, call});
      for (size_t i = 0; i < outputs.size(); ++i)
        out.push_back({f.bindings[outputs[i]].var, make_tuple_get_item(tuple, static_cast<int64_t>(i))});
    }
    if (!report_) return;
    for (size_t k : nodes) {
      const FunctionNode* comp = composite_of(f.bindings[k]);
      for (size_t j = 0; j < comp->bindings.size(); ++j) {
        std::string var =
            j + 1 == comp->bindings.size() ? f.bindings[k].var->name : comp->bindings[j].var->name;
        if (OpDecision* d = report_->find(f.name, var)) d->region = name;
      }
    }
  }

  const Module& in_;
  const PartitionOptions& opts_;
  PartitionReport* report_;
  size_t n_ = 0;
  std::vector<std::vector<size_t>> preds_, succs_;
  std::vector<int> region_;
  std::set<size_t> demoted_;
  std::vector<Function> new_functions_;
  std::vector<std::string> taken_;
};

}  // namespace

Module merge_composite_functions(const Module& m, const PartitionOptions& opts, PartitionReport* report) {
  return Merger(m, opts, report).run();
}

}  // namespace kiln
