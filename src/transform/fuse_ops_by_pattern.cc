// FuseOpsByPattern: every pattern match becomes a composite function.
//
// Requires: a verified module; the backends' patterns in pattern_registry().
// Guarantees: each claimed op is inside exactly one composite function
// (Composite = "<backend>.<pattern>", Primitive = 1; with annotate_codegen
// also Codegen and global_symbol, so each match is its own offloaded region);
// the composite is called where the match's root was. Unclaimed ops stay.
//
// Claim order: patterns by priority (then registration order); for each
// pattern, roots from the last binding to the first. A match is taken only
// when none of its ops is claimed, its intermediate values are not used
// outside it, none of its values has a bounded dynamic axis, and the
// pattern's check accepts it.
//
//   %y = matmul(%x, %w)             %z = @my_npu_matmul_relu_fused_0(%x, %w)
//   %z = nn.relu(%y)         ==>    def @my_npu_matmul_relu_fused_0(%x, %w) attrs
//   return %z                         {Codegen = "my_npu", Composite = "my_npu.matmul_relu_fused",
//   ...}
//
// With bind_constants = false, constants the match uses become parameters
// of the composite and the call passes them.
#include <algorithm>
#include <map>
#include <set>

#include "ir/visitor.h"
#include "pattern/registry.h"
#include "transform/partition.h"

namespace kiln {
namespace {

struct Claim {
  const PatternEntry* entry;
  Match match;
};

// Why a structural match cannot be taken, or "" when it can.
std::string match_conflict(const Match& m, const FunctionNode& f, const std::vector<int>& owner,
                           const BindingIndex& index) {
  std::set<const ExprNode*> inside;
  for (const Binding* b : m.bindings) {
    if (owner[index.position(b)] >= 0) return "claimed already";
    inside.insert(b->var.get());
  }
  for (const auto& in : m.inputs)
    if (inside.count(in.get())) return "an input of the match is produced inside it";
  // Backends compile static shapes; a value whose extent is known only at
  // run time stays with the host's reference kernels.
  for (const Binding* b : m.bindings)
    if (any_bounded(flatten_type(b->var->type))) return "dynamic shape (a bounded dynamic leading axis)";
  for (const auto& in : m.inputs)
    if (any_bounded(flatten_type(in->type))) return "dynamic shape (a bounded dynamic leading axis)";
  std::set<const Binding*> members(m.bindings.begin(), m.bindings.end());
  std::vector<const ExprNode*> used;
  for (const auto& b : f.bindings) {
    if (members.count(&b)) continue;
    used.clear();
    collect_used_vars(b.value, used);
    for (const ExprNode* v : used)
      if (inside.count(v) && v != m.root->var.get())
        return "intermediate %" + static_cast<const VarNode*>(v)->name + " is used outside the pattern";
  }
  used.clear();
  collect_used_vars(f.result, used);
  for (const ExprNode* v : used)
    if (inside.count(v) && v != m.root->var.get()) return "intermediate value is returned";
  return "";
}

class Fuser {
 public:
  Fuser(const Module& m, const PartitionOptions& opts, PartitionReport* report)
      : in_(m), opts_(opts), report_(report) {}

  Module run() {
    Module out = in_;
    std::vector<std::string> backends =
        opts_.backends.empty() ? pattern_registry().backends() : opts_.backends;
    for (const auto& b : backends)
      KILN_CHECK(!pattern_registry().for_backend(b).empty(), "partition: unknown backend '", b,
                 "' (registered: ", join(pattern_registry().backends()), ")");
    entries_ = pattern_registry().for_backends(backends);
    for (const auto& f : in_.functions)
      if (is_partitionable(*f)) out.set(fuse_function(*f));
    for (auto& f : new_functions_) out.functions.push_back(std::move(f));
    return out;
  }

 private:
  static std::string join(const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "none" : s;
  }

  Function fuse_function(const FunctionNode& f) {
    BindingIndex index(f);
    std::vector<int> owner(f.bindings.size(), -1);
    std::vector<std::string> rejection(f.bindings.size());
    std::vector<Claim> claims;
    for (const PatternEntry* entry : entries_) {
      for (size_t i = f.bindings.size(); i-- > 0;) {
        if (owner[i] >= 0) continue;
        auto match = match_pattern(entry->pattern, f.bindings[i], index);
        if (!match) continue;
        std::string conflict = match_conflict(*match, f, owner, index);
        std::string reason;
        if (!conflict.empty()) {
          if (conflict != "claimed already") reason = entry->name + ": " + conflict;
        } else if (entry->check) {
          if (auto r = entry->check(*match, opts_.backend_options.for_backend(entry->backend())))
            reason = "check rejected: " + *r + " (" + entry->name + ")";
        }
        if (!conflict.empty() || !reason.empty()) {
          // Every refusal is kept: --explain shows why each pattern said no.
          for (const Binding* b : match->bindings) {
            std::string& r = rejection[index.position(b)];
            if (!reason.empty() && r.find(reason) == std::string::npos) r += (r.empty() ? "" : "; ") + reason;
          }
          continue;
        }
        for (const Binding* b : match->bindings) owner[index.position(b)] = static_cast<int>(claims.size());
        claims.push_back({entry, std::move(*match)});
      }
    }
    // Regions below the minimum size go back to the host (only when each
    // composite is its own region; merging decides later otherwise).
    std::vector<bool> too_small(claims.size(), false);
    if (opts_.annotate_codegen)
      for (size_t k = 0; k < claims.size(); ++k)
        too_small[k] = static_cast<int64_t>(claims[k].match.bindings.size()) < opts_.min_region_size;
    record(f, owner, rejection, claims, too_small);

    std::vector<Binding> bindings;
    for (size_t i = 0; i < f.bindings.size(); ++i) {
      int k = owner[i];
      if (k < 0 || too_small[k]) {
        bindings.push_back(f.bindings[i]);
        continue;
      }
      if (claims[k].match.root != &f.bindings[i]) continue;  // folded into the composite
      bindings.push_back(make_composite(f, claims[k]));
    }
    return make_function(f.name, f.params, std::move(bindings), f.result, f.attrs, f.ret_type);
  }

  void record(const FunctionNode& f, const std::vector<int>& owner, const std::vector<std::string>& rejection,
              const std::vector<Claim>& claims, const std::vector<bool>& too_small) {
    std::vector<std::string> host;
    for (size_t i = 0; i < f.bindings.size(); ++i) {
      const auto* call = as<CallNode>(f.bindings[i].value);
      if (!call || !call->is_op_call()) continue;
      OpDecision d;
      d.function = f.name;
      d.var = f.bindings[i].var->name;
      d.op = call->op->name;
      int k = owner[i];
      if (k >= 0 && !too_small[k]) {
        d.backend = claims[k].entry->backend();
        d.pattern = claims[k].entry->name;
      } else if (k >= 0) {
        d.reason = "region below the minimum size (" + std::to_string(claims[k].match.bindings.size()) +
                   " < " + std::to_string(opts_.min_region_size) + " ops)";
      } else {
        d.reason = rejection[i].empty() ? "no pattern matched" : rejection[i];
      }
      if (!d.offloaded()) host.push_back("  %" + d.var + " = " + d.op + ": " + d.reason);
      if (report_) report_->ops.push_back(std::move(d));
    }
    if (opts_.strict && !host.empty()) {
      std::string list;
      for (const auto& h : host) list += "\n" + h;
      throw Error("strict partitioning: " + std::to_string(host.size()) + " op(s) of @" + f.name +
                  " would fall back to the host:" + list);
    }
  }

  Binding make_composite(const FunctionNode& f, const Claim& claim) {
    const Match& m = claim.match;
    std::map<const ExprNode*, Expr> subst;
    std::vector<Var> params;
    std::vector<Expr> args;
    std::set<std::string> names;
    auto fresh = [&](std::string base) {
      std::string n = base;
      for (int i = 1; names.count(n); ++i) n = base + "_" + std::to_string(i);
      names.insert(n);
      return n;
    };
    auto add_param = [&](const Expr& e, const std::string& base) {
      if (subst.count(e.get())) return;
      Var p = make_var(fresh(base), e->type);
      params.push_back(p);
      args.push_back(e);
      subst[e.get()] = p;
    };
    for (const Binding* b : m.bindings) names.insert(b->var->name);
    int n_const = 0;
    for (const Binding* b : m.bindings) {
      for (const auto& a : as<CallNode>(b->value)->args) {
        bool in_match = std::find(m.inputs.begin(), m.inputs.end(), a) != m.inputs.end() ||
                        std::find(m.constants.begin(), m.constants.end(), a) != m.constants.end();
        if (!in_match) continue;
        if (const auto* v = as<VarNode>(a))
          add_param(a, v->name);
        else if (as<ConstantNode>(a) && !opts_.bind_constants)
          add_param(a, "c" + std::to_string(n_const++));
        else if (!as<ConstantNode>(a))
          add_param(a, "arg");
      }
    }
    std::vector<Binding> body;
    for (const Binding* b : m.bindings) {
      const auto* call = as<CallNode>(b->value);
      std::vector<Expr> new_args;
      for (const auto& a : call->args) {
        auto it = subst.find(a.get());
        new_args.push_back(it == subst.end() ? a : it->second);
      }
      Expr value = rebuild_call(*call, std::move(new_args), &in_);
      Var v = make_var(b->var->name, value->type);
      subst[b->var.get()] = v;
      body.push_back({v, value});
    }
    std::string backend = claim.entry->backend();
    std::string name = unique_function_name(in_, backend + "_" + claim.entry->short_name(), taken_);
    Attrs attrs{{"Composite", claim.entry->name}, {"Primitive", int64_t{1}}};
    if (opts_.annotate_codegen) {
      attrs.set("Codegen", backend);
      attrs.set("global_symbol", name);
    }
    Expr result = body.back().var;
    Function fn = make_function(name, params, std::move(body), result, attrs);
    std::vector<Type> param_types;
    for (const auto& p : params) param_types.push_back(p->type);
    new_functions_.push_back(fn);
    if (report_) {
      for (const Binding* b : m.bindings)
        if (OpDecision* d = report_->find(f.name, b->var->name); d && opts_.annotate_codegen)
          d->region = name;
    }
    return {m.root->var, make_function_call(name, param_types, fn->ret_type, std::move(args))};
  }

  const Module& in_;
  const PartitionOptions& opts_;
  PartitionReport* report_;
  std::vector<const PatternEntry*> entries_;
  std::vector<Function> new_functions_;
  std::vector<std::string> taken_;
};

}  // namespace

bool is_partitionable(const FunctionNode& f) {
  return !f.attrs.has("Composite") && !f.attrs.has("Codegen") && !f.attrs.has("Primitive");
}

std::string unique_function_name(const Module& m, const std::string& base, std::vector<std::string>& taken) {
  for (int i = 0;; ++i) {
    std::string name = base + "_" + std::to_string(i);
    if (m.find(name) || std::find(taken.begin(), taken.end(), name) != taken.end()) continue;
    taken.push_back(name);
    return name;
  }
}

Module fuse_ops_by_pattern(const Module& m, const PartitionOptions& opts, PartitionReport* report) {
  return Fuser(m, opts, report).run();
}

}  // namespace kiln
