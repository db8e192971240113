#include "module_output.h"

#include <iostream>

#include "ir/text.h"
#include "ir/visitor.h"

namespace kiln::cli {
namespace {

class InlineConstants : public ExprMutator {
 protected:
  Expr mutate_Constant(const Expr& e, const ConstantNode& n) override {
    return n.name.empty() ? e : make_constant(n.value, "");
  }
};

// The module without its `weights` attribute.
Module without_weights(const Module& m) {
  Module out = m;
  out.attrs = Attrs{};
  for (const auto& [key, value] : m.attrs.items())
    if (key != "weights") out.attrs.set(key, value);
  return out;
}

}  // namespace

void write_module_output(const Module& m, const std::string& path, int64_t inline_limit) {
  if (path.empty()) {
    std::cout << print_module(m);
    return;
  }
  Module out = without_weights(m);
  if (path != "-") return save_module(out, path, inline_limit);
  InlineConstants inliner;
  for (auto& f : out.functions) f = inliner.mutate_function(f);
  std::cout << print_module(out);
}

}  // namespace kiln::cli
