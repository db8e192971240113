// pack-matmul-weights{lanes=N}: a float32 matmul or nn.dense whose right
// operand is a 2-D constant becomes nn.matmul_packed on that constant packed
// into panels (nn.pack_matmul_weight, src/op/nn_matmul.cc), each as wide as
// the register tile the product is computed in on a CPU whose vectors hold
// N float32 lanes (schedule::product_column_block). fold-constants then
// packs the weight once, at compile time.
//
// Why: a product's kernel reads its right operand one column tile at a
// time, K rows of a few dozen columns. Unpacked, those rows are a whole
// matrix row apart, so each column tile first copies its rows into a
// contiguous panel, on every call, from rows spread over the matrix (rec's
// head, 120 x 6625: one cache line of each of 120 rows per tile, a pattern
// the hardware prefetchers do not follow). Packed, the panels are the
// constant itself, read in place from start to end.
//
// Requires: nothing; run fold-constants and dead-code-elimination after it
// (the packed weights are calls on constants until folded). Guarantees:
// every variable keeps its type and value; the function's results are
// unchanged.
//
//   %y = matmul(%x: (40, 120), const (120, 6625))
// =>
//   %y = nn.matmul_packed(%x, nn.pack_matmul_weight(const, columns=32), units=6625)
#include "schedule/schedule.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// matmul(x, w) or nn.dense(x, w), float32 throughout, w a 2-D constant:
// the packed product; else null.
Expr packed_product(const Expr& value, const schedule::CpuTarget& cpu) {
  const CallNode* c = as<CallNode>(value);
  if (!c || !c->is_op_call()) return nullptr;
  const CallNode& call = *c;
  const std::string& op = call.op->name;
  const bool dense = op == "nn.dense";
  if ((!dense && op != "matmul") || call.args.size() != 2) return nullptr;
  const ConstantNode* w = as<ConstantNode>(call.args[1]);
  const TensorDesc *x = tensor_desc(call.args[0]), *y = tensor_desc(value);
  if (!w || !x || !y || w->value.dtype() != DType::Float32 || w->value.ndim() != 2 ||
      x->dtype != DType::Float32 || y->dtype != DType::Float32 || x->shape.empty())
    return nullptr;
  const int64_t units = w->value.dim(dense ? 0 : 1);
  Attrs pa;
  pa.set("columns", schedule::product_column_block(cpu, units));
  pa.set("transpose", int64_t{dense ? 1 : 0});
  Attrs ma;
  ma.set("units", units);
  return make_op_call("nn.matmul_packed",
                      {call.args[0], make_op_call("nn.pack_matmul_weight", {call.args[1]}, pa)}, ma);
}

Function pack_function(const FunctionNode& f, const schedule::CpuTarget& cpu) {
  std::vector<Binding> out;
  bool changed = false;
  for (const Binding& b : f.bindings) {
    Expr packed = packed_product(b.value, cpu);
    out.push_back({b.var, packed ? packed : b.value});
    changed |= packed != nullptr;
  }
  if (!changed) return nullptr;
  return make_function(f.name, f.params, std::move(out), f.result, f.attrs);
}

}  // namespace

Module pack_matmul_weights(const Module& m, const PassOptions& options) {
  const int64_t lanes = integer_pass_option(options, "pack-matmul-weights", "lanes", 1, 64,
                                            "the float32 lanes of the host's vectors, e.g. lanes=16");
  schedule::CpuTarget cpu;
  cpu.vector_bytes = int(lanes * 4);
  Module out = m;
  for (const Function& f : m.functions) {
    // Backend regions and their composites keep the operands their codegen expects.
    if (f->attrs.find("Codegen") || f->attrs.find("Composite")) continue;
    if (Function packed = pack_function(*f, cpu)) out.set(packed);
  }
  return out;
}

}  // namespace kiln
