// The tensor-IR passes by name, and the order a build runs them in.
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

struct NamedPass {
  const char* name;
  PrimFunc (*run)(const PrimFunc&, const TirPassOptions&);
};

const NamedPass kPasses[] = {
    {"check-bounds", [](const PrimFunc& f, const TirPassOptions& o) { return check_bounds(f, o); }},
    {"flatten-buffers", [](const PrimFunc& f, const TirPassOptions&) { return flatten_buffers(f); }},
    {"simplify", [](const PrimFunc& f, const TirPassOptions&) { return simplify(f); }},
    {"verify-scratchpad-capacity",
     [](const PrimFunc& f, const TirPassOptions& o) {
       verify_scratchpad_capacity(*f, o);
       return f;
     }},
    {"lower-scratchpad-alloc",
     [](const PrimFunc& f, const TirPassOptions& o) { return lower_scratchpad_alloc(f, o); }},
    {"vectorize-loops", [](const PrimFunc& f, const TirPassOptions& o) { return vectorize_loops(f, o); }},
    {"form-dot-products", [](const PrimFunc& f, const TirPassOptions& o) { return form_dot_products(f, o); }},
    {"unroll-loops", [](const PrimFunc& f, const TirPassOptions&) { return unroll_loops(f); }},
    {"partition-loops", [](const PrimFunc& f, const TirPassOptions&) { return partition_loops(f); }},
    {"promote-accumulators",
     [](const PrimFunc& f, const TirPassOptions&) { return promote_accumulators(f); }},
    {"interleave-accumulators",
     [](const PrimFunc& f, const TirPassOptions& o) { return interleave_accumulators(f, o); }},
    {"share-common-subexpressions",
     [](const PrimFunc& f, const TirPassOptions&) { return share_common_subexpressions(f); }},
    {"lower-workspace-alloc",
     [](const PrimFunc& f, const TirPassOptions& o) { return lower_workspace_alloc(f, o); }},
};

}  // namespace

const std::vector<std::string>& tir_pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const NamedPass& p : kPasses) v.push_back(p.name);
    return v;
  }();
  return names;
}

PrimFunc run_tir_pass(const std::string& name, const PrimFunc& f, const TirPassOptions& options) {
  for (const NamedPass& p : kPasses) {
    if (name != p.name) continue;
    PrimFunc out = p.run(f, options);
    verify_prim_func(*out);  // every pass keeps the function valid
    return out;
  }
  std::string known;
  for (const NamedPass& p : kPasses) known += std::string(known.empty() ? "" : ", ") + p.name;
  throw Error("unknown tensor-IR pass '" + name + "' (known: " + known + ")");
}

const std::vector<std::string>& tir_build_passes() {
  // The capacity check reads allocate statements, so it runs before the
  // lowering replaces them with calls. Flattening runs after the lowerings so
  // that byte sizes come from the buffer's declared shape.
  // check-bounds runs first: its early returns are then seen by the
  // allocation lowerings, which release buffers on them.
  static const std::vector<std::string> names = {"check-bounds",
                                                 "verify-scratchpad-capacity",
                                                 "lower-scratchpad-alloc",
                                                 "lower-workspace-alloc",
                                                 "flatten-buffers",
                                                 "simplify",
                                                 "form-dot-products",
                                                 "vectorize-loops",
                                                 "unroll-loops",
                                                 "partition-loops",
                                                 "simplify",
                                                 "promote-accumulators",
                                                 "interleave-accumulators",
                                                 "share-common-subexpressions"};
  return names;
}

PrimFunc lower_for_build(const PrimFunc& f, const TirPassOptions& options) {
  verify_prim_func(*f);
  PrimFunc out = f;
  for (const std::string& name : tir_build_passes()) out = run_tir_pass(name, out, options);
  return out;
}

}  // namespace kiln::tir
