// The graph pass pipeline: every pass, in order, with a one-line description.
//
// Ordering: fold-constants runs before dead-code-elimination, because folding
// leaves the bindings it folded away unused.
#include <chrono>
#include <iostream>

#include "ir/text.h"
#include "transform/pass.h"

namespace kiln {

const std::vector<PassInfo>& graph_passes() {
  static const std::vector<PassInfo> passes = {
      {"verify", "check single assignment, scoping and types", verify_pass},
      {"fold-constants", "evaluate op calls whose inputs are all constants", fold_constants},
      {"dead-code-elimination", "remove bindings that nothing uses", eliminate_dead_code},
  };
  return passes;
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

Module run_passes(const Module& m, const std::vector<std::string>& names, const PipelineOptions& opts) {
  std::vector<const PassInfo*> passes;
  for (const auto& n : names) {
    const PassInfo* p = find_graph_pass(n);
    if (!p) {
      std::string known;
      for (const auto& q : graph_passes()) known += (known.empty() ? "" : ", ") + q.name;
      throw Error("unknown pass '" + n + "' (known passes: " + known + ")");
    }
    passes.push_back(p);
  }
  std::ostream& log = opts.log ? *opts.log : std::cerr;
  Module cur = m;
  for (const PassInfo* p : passes) {
    auto start = std::chrono::steady_clock::now();
    Module next = p->run(cur);
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
    if (opts.verify_each) {
      try {
        verify_module(next);
      } catch (const Error& e) {
        throw Error("after pass " + p->name + ": " + e.message());
      }
    }
    bool changed = !same_module(cur, next);
    if (opts.time_passes) log << "# pass " << p->name << ": " << us << " us" << (changed ? "" : " (no change)") << "\n";
    if (opts.print_after_all && changed) log << "# IR after " << p->name << "\n" << print_module(next) << "\n";
    cur = std::move(next);
  }
  return cur;
}

}  // namespace kiln
