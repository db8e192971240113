// dead-code-elimination: removes bindings whose variable is never used.
//
// Requires: nothing. Guarantees: every remaining binding is used by a later
// binding or by the result. All ops are pure, so dropping a call is safe.
//
//   %a = nn.relu(%x)          %b = exp(%x)
//   %b = exp(%x)        =>    return %b
//   return %b
#include <unordered_set>

#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

class UseCollector : public ExprVisitor {
 public:
  std::unordered_set<const ExprNode*> used;

 protected:
  void visit_Var(const VarNode& v) override { used.insert(&v); }
};

Function eliminate_in_function(const Function& f) {
  UseCollector uses;
  uses.visit(f->result);
  std::vector<bool> keep(f->bindings.size(), false);
  // Walk backwards: a binding is live when a live binding or the result uses it.
  for (size_t i = f->bindings.size(); i-- > 0;) {
    const Binding& b = f->bindings[i];
    if (!uses.used.count(b.var.get())) continue;
    keep[i] = true;
    uses.visit(b.value);
  }
  std::vector<Binding> live;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) live.push_back(f->bindings[i]);
  if (live.size() == f->bindings.size()) return f;
  auto out = std::make_shared<FunctionNode>(*f);
  out->bindings = std::move(live);
  return out;
}

}  // namespace

Module eliminate_dead_code(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = eliminate_in_function(f);
  return out;
}

}  // namespace kiln
