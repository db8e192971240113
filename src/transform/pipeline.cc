// The graph pass pipeline: every pass, in order, with a one-line description.
//
// Ordering: fold-constants runs before dead-code-elimination, because folding
// leaves the bindings it folded away unused; graph_optimization_passes()
// states the order of the optimizations a compiled model gets.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include "ir/text.h"
#include "transform/pass.h"

namespace kiln {

const std::vector<PassInfo>& graph_passes() {
  static const std::vector<PassInfo> passes = {
      {"verify", "check single assignment, scoping and types", verify_pass},
      {"fold-constants", "evaluate op calls whose inputs are all constants", fold_constants},
      {"decompose-einsum", "rewrite float32 einsums as sums, transposes, reshapes and matmuls",
       decompose_einsum},
      {"decompose-recurrent", "unroll nn.rnn, nn.gru and nn.lstm into their steps' products and gates",
       decompose_recurrent},
      {"simplify-powers", "rewrite power(x, 2) as multiply(x, x) and power(x, 1) as x", simplify_powers},
      {"eliminate-common-subexpressions", "merge bindings of the same op, attributes and arguments",
       eliminate_common_subexpressions},
      {"canonicalize-activations", "turn activations written in pieces into their single ops",
       canonicalize_activations},
      {"fold-batch-norm", "fold batch_norm into the constant weight of the conv2d/dense/matmul before it",
       fold_batch_norm},
      {"fold-scale-shift",
       "fold constant per-channel multiplies and adds after a conv2d/dense/matmul into it", fold_scale_shift},
      {"dead-code-elimination", "remove bindings that nothing uses", eliminate_dead_code},
      // Partitioning: fuse, then merge, then codegen (each needs the one before).
      {"fuse-ops-by-pattern", "turn backend pattern matches into composite functions", nullptr,
       fuse_ops_by_pattern_pass},
      {"merge-composite-functions", "merge adjacent composites of one backend into regions, no cycles",
       nullptr, merge_composite_functions_pass},
      {"run-codegen", "call each backend's codegen once with all of its regions", nullptr, run_codegen_pass},
      // Host code: after partitioning, so backends see NCHW convs.
      {"widen-float16", "run float16 ops on float32 values, each result rounded to float16 as the op's own",
       nullptr, widen_float16},
      {"quantize-convs", "run convs on dequantized uint8 data and int8 weights as integer convs, scaled",
       nullptr, quantize_convs},
      {"quantize-matmuls", "run matmuls of shifted uint8 data by int8 weights as uint8 x int8 products",
       quantize_matmuls},
      {"quantized-max-pools", "run max pools of dequantized integers (and their relu) on the integers",
       quantized_max_pools},
      {"convert-layout",
       "run float32 convs (with dot=4|2 uint8 integer convs too) and the elementwise ops between them in "
       "channel blocks (NCHWc)",
       nullptr, convert_layout},
      {"pack-matmul-weights",
       "pack the constant right operands of matmul and dense into column panels (with dot=4|2 the int8 "
       "weights of uint8 products too)",
       nullptr, pack_matmul_weights},
      {"winograd-weights",
       "run float32 3x3 stride-1 convs with constant weights by Winograd's F(m, 3) along output rows",
       winograd_weights},
  };
  return passes;
}

const std::vector<std::string>& graph_optimization_passes() {
  static const std::vector<std::string> names = {
      // Before fold-constants, which then transposes and reshapes constant
      // operands at compile time (and pack-matmul-weights packs them).
      "decompose-einsum",
      "decompose-recurrent",
      // So batch_norm parameters, weights and the scalars of
      // activation pieces computed from constants are constants.
      "fold-constants",
      // After fold-constants, which makes exponents computed from constants
      // constants; independent of the passes below.
      "simplify-powers",
      // After fold-constants (folded constants compare by value); before
      // canonicalize-activations, whose patterns need both uses of x in
      // x * hard_sigmoid(x) to be one variable, and before fold-batch-norm,
      // which folds only a conv whose one user is the batch_norm.
      "eliminate-common-subexpressions",
      // Independent of fold-batch-norm (one rewrites after the batch_norm,
      // the other up to it); both must precede partitioning so backend
      // patterns see conv2d + bias add + one activation op.
      "canonicalize-activations",
      "fold-batch-norm",
      // After fold-batch-norm: a batch_norm between a conv and its scale and
      // shift stops the chain this pass folds, and once folded it is one
      // more bias add to fold through. Independent of
      // canonicalize-activations (the last step keeps its variable, which
      // the activation uses); before partitioning, so the patterns see
      // conv2d + bias add + activation.
      "fold-scale-shift",
      // Last: removes the pieces and bindings the passes above left unused.
      "dead-code-elimination",
  };
  return names;
}

const PassInfo* find_graph_pass(const std::string& name) {
  for (const auto& p : graph_passes())
    if (p.name == name) return &p;
  return nullptr;
}

Module verify_pass(const Module& m) {
  verify_module(m);
  return m;
}

static bool same_module(const Module& a, const Module& b) {
  if (a.functions.size() != b.functions.size()) return false;
  for (size_t i = 0; i < a.functions.size(); ++i)
    if (a.functions[i] != b.functions[i]) return false;
  return a.attrs == b.attrs;
}

std::string split_pass_options(const std::string& spec, PassOptions& options) {
  size_t open = spec.find('{');
  if (open == std::string::npos) return spec;
  if (spec.back() != '}') throw Error("pass '" + spec + "': options must end with '}'");
  std::stringstream ss(spec.substr(open + 1, spec.size() - open - 2));
  std::string item;
  while (ss >> item) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("pass '" + spec + "': option '" + item + "' must be key=value");
    options[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return spec.substr(0, open);
}

const CallNode* op_call(const Expr& e, const char* name) {
  const CallNode* c = as<CallNode>(e);
  return c && c->is_op_call() && c->op->name == name ? c : nullptr;
}

BindingRewriter::BindingRewriter(const FunctionNode& f) : f_(f), fresh_(f) {
  for (const Binding& b : f.bindings) bound_[b.var.get()] = b.value;
}

Function BindingRewriter::run() {
  bool changed = false;
  for (const Binding& b : f_.bindings)
    if (rewrite(b))
      changed = true;
    else
      out_.push_back(b);
  if (!changed) return nullptr;
  return make_function(f_.name, f_.params, std::move(out_), f_.result, f_.attrs);
}

Expr BindingRewriter::value_of(const Expr& e) const {
  auto it = bound_.find(e.get());
  return it == bound_.end() ? e : it->second;
}

Var BindingRewriter::bind(const std::string& name, Expr value, std::vector<Binding>& to) {
  Var v = make_var(fresh_(name), value->type);
  to.push_back({v, std::move(value)});
  return v;
}

Module rewrite_host_functions(const Module& m,
                              const std::function<Function(const FunctionNode& f)>& rewrite) {
  Module out = m;
  for (const Function& f : m.functions) {
    if (f->attrs.find("Codegen") || f->attrs.find("Composite")) continue;
    if (Function rewritten = rewrite(*f)) out.set(rewritten);
  }
  return out;
}

Module rewrite_bindings(const Module& m, const BindingRewrite& rewrite) {
  return rewrite_host_functions(m, [&](const FunctionNode& f) -> Function {
    FreshNames fresh(f);
    std::vector<Binding> bindings;
    bool changed = false;
    for (const Binding& b : f.bindings)
      if (rewrite(b, fresh, bindings))
        changed = true;
      else
        bindings.push_back(b);
    if (!changed) return nullptr;
    return make_function(f.name, f.params, std::move(bindings), f.result, f.attrs);
  });
}

FreshNames::FreshNames(const FunctionNode& f) {
  for (const Var& p : f.params) taken_.insert(p->name);
  for (const Binding& b : f.bindings) taken_.insert(b.var->name);
}

std::string FreshNames::operator()(const std::string& base) {
  std::string name = base;
  for (int k = 1; taken_.count(name); ++k) name = base + std::to_string(k);
  taken_.insert(name);
  return name;
}

void check_pass_option_keys(const PassOptions& options, const std::string& pass,
                            const std::vector<std::string>& keys) {
  for (const auto& entry : options) {
    if (std::find(keys.begin(), keys.end(), entry.first) != keys.end()) continue;
    std::string takes;
    for (const std::string& k : keys) takes += (takes.empty() ? "" : ", ") + k + "=N";
    throw Error(pass + ": unknown option '" + entry.first + "' (it takes " + takes + ")");
  }
}

int64_t integer_pass_option_or(const PassOptions& options, const std::string& pass, const std::string& key,
                               int64_t lo, int64_t hi, const std::string& meaning, int64_t fallback) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  int64_t v = lo - 1;
  try {
    size_t used = 0;
    v = std::stoll(it->second, &used);
    if (used != it->second.size()) v = lo - 1;
  } catch (const std::exception&) {
    v = lo - 1;
  }
  if (v < lo || v > hi)
    throw Error(pass + ": option " + key + " must be an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi) + " (" + meaning + "), got '" + it->second + "'");
  return v;
}

int64_t integer_pass_option(const PassOptions& options, const std::string& pass, const std::string& key,
                            int64_t lo, int64_t hi, const std::string& meaning) {
  check_pass_option_keys(options, pass, {key});
  return required_integer_pass_option(options, pass, key, lo, hi, meaning);
}

int64_t required_integer_pass_option(const PassOptions& options, const std::string& pass,
                                     const std::string& key, int64_t lo, int64_t hi,
                                     const std::string& meaning) {
  if (!options.count(key))
    throw Error(pass + ": option " + key + " must be an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi) + " (" + meaning + "), got '(none)'");
  return integer_pass_option_or(options, pass, key, lo, hi, meaning, lo);
}

int64_t dot_pass_option(const PassOptions& options, const std::string& pass, const std::string& what) {
  const std::string meaning = "the products per lane of the integer dot product " + what +
                              " for: 4 (bytes), 2 (int16 pairs), 0 (none)";
  const int64_t dot = integer_pass_option_or(options, pass, "dot", 0, 4, meaning, 0);
  if (dot != 0 && dot != 2 && dot != 4)
    throw Error(pass + ": option dot must be 0, 2 or 4 (" + meaning + "), got " + std::to_string(dot));
  return dot;
}

Module run_passes(const Module& m, const std::vector<std::string>& names, const PipelineOptions& opts) {
  std::vector<const PassInfo*> passes;
  std::vector<PassOptions> pass_options;
  for (const auto& spec : names) {
    PassOptions options;
    std::string n = split_pass_options(spec, options);
    const PassInfo* p = find_graph_pass(n);
    if (!p) {
      std::string known;
      for (const auto& q : graph_passes()) known += (known.empty() ? "" : ", ") + q.name;
      throw Error("unknown pass '" + n + "' (known passes: " + known + ")");
    }
    if (!options.empty() && !p->run_with_options) throw Error("pass '" + n + "' takes no options");
    passes.push_back(p);
    pass_options.push_back(std::move(options));
  }
  std::ostream& log = opts.log ? *opts.log : std::cerr;
  Module cur = m;
  for (size_t i = 0; i < passes.size(); ++i) {
    const PassInfo* p = passes[i];
    auto start = std::chrono::steady_clock::now();
    Module next = p->run_with_options ? p->run_with_options(cur, pass_options[i]) : p->run(cur);
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
                  .count();
    if (opts.verify_each) {
      try {
        verify_module(next);
      } catch (const Error& e) {
        throw Error("after pass " + p->name + ": " + e.message());
      }
    }
    bool changed = !same_module(cur, next);
    if (opts.time_passes)
      log << "# pass " << p->name << ": " << us << " us" << (changed ? "" : " (no change)") << "\n";
    if (opts.print_after_all && changed)
      log << "# IR after " << p->name << "\n" << print_module(next) << "\n";
    cur = std::move(next);
  }
  return cur;
}

}  // namespace kiln
