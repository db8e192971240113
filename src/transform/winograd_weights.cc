// winograd-weights: a float32 3x3 stride-1 nn.conv2d of one group whose
// weight is a constant, with kMinChannels input and output channels or more
// and two output rows or more, becomes nn.conv2d_winograd on
// the weight transformed for Winograd's F(m, 3) along output rows
// (nn.winograd_weight, src/op/nn_winograd.cc). fold-constants then
// transforms the weight once, at compile time, instead of the kernel doing
// it on every call (a few percent of the conv).
//
// F(4, 3) (half the multiply-adds) where 4 divides the output rows or there
// are 16 or more, else F(2, 3) (two thirds), so the last tile leaves few
// rows unused.
//
// A conv that convert-layout made channel-blocked (nn.conv2d_blocked of
// blocked data, its weight blocked) becomes the blocked nn.conv2d_winograd
// likewise when each transformed weight serves enough multiply-adds
// (blocked_winograd_tile_rows), with F(m, 3) of the fewer phase rows.
//
// Requires: nothing; run fold-constants and dead-code-elimination after it
// (the transformed weight is a call on a constant until folded).
// Guarantees: every variable keeps its type; the function's results are
// unchanged up to rounding.
//
//   %y = nn.conv2d(%x: (1, 96, 80, 80), const (24, 96, 3, 3), padding=[1, 1, 1, 1])
// =>
//   %y = nn.conv2d_winograd(%x, nn.winograd_weight(const, tile_rows=4), padding=[1, 1, 1, 1],
//                           tile_rows=4)
#include <string>
#include <vector>

#include "transform/pass.h"

namespace kiln {
namespace {

// Measured against the direct NCHW conv (3x3 with bias and relu, one
// thread, Zen 5; AVX-512 / AVX2 code): every output of two rows or more
// gains, 16 -> 16 at 8x8 3 -> 2 / 5 -> 2 us, 96 -> 24 at 20x20 137 -> 69 /
// 243 -> 104 us, 64 -> 64 at 2x40 40 -> 23 / 66 -> 45 us; one row loses
// (F(2, 3) computes a second row for nothing: 64 -> 64 at 1x40 17 -> 23 /
// 35 -> 50 us). Few channels gain too, down to 4 in and out (8 -> 8 at
// 80x80 37 -> 30 / 79 -> 63 us, 24 -> 4 at 40x40 21 -> 13 / 33 -> 23 us,
// 4 -> 4 at 80x80 the same); 3 in (an image) or 2 out lose with AVX2 code
// (3 -> 16 at 80x80 62 -> 67 us, 16 -> 2 46 -> 48 us).
constexpr int64_t kMinChannels = 4;
constexpr int64_t kMinRows = 2;

// A blocked Winograd conv's transformed weights are (m + 2) / 3 times the
// direct conv's (2x for F(4, 3)) and each serves images x row tiles x
// columns multiply-adds; below this many, streaming them from memory costs
// more than the multiply-adds saved. One thread, Zen 5, 3x3 C -> C with
// bias and relu, blocked direct against blocked F(4, 3), AVX-512 / AVX2
// code: 512 at 7x7 (14 uses; F(2, 3): 28) 1.30 -> 1.46 / 3.03 -> 3.63 ms,
// F(2, 3) 1.52 / 3.56 ms; 256 at 14x14 (56) 1.05 -> 0.85 ms; 128 at 28x28
// (196) 1.17 -> 0.63 / 2.38 -> 1.32 ms.
constexpr int64_t kMinBlockedWeightUses = 48;

bool ones(const std::vector<int64_t>& v) { return v == std::vector<int64_t>{1, 1}; }

// Whether a conv's attributes and weight shape (K, C, KH, KW, ...) are a
// 3x3 stride-1 one-group conv's.
bool stride1_3x3(const Shape& w, const Attrs& a) {
  return a.get_int("groups") == 1 && ones(a.get_ints("strides")) && ones(a.get_ints("dilation")) &&
         w.size() >= 4 && w[2] == 3 && w[3] == 3;
}

}  // namespace

int64_t blocked_winograd_tile_rows(int64_t images, int64_t rows, int64_t columns) {
  int64_t best = 0, best_phase_rows = 0;
  for (int64_t m : {2, 4}) {
    const int64_t tiles = (rows + m - 1) / m, phase_rows = tiles * (m + 2);
    if (rows < kMinRows || images * tiles * columns < kMinBlockedWeightUses) continue;
    if (best == 0 || phase_rows < best_phase_rows) {
      best = m;
      best_phase_rows = phase_rows;
    }
  }
  return best;
}

int64_t winograd_tile_rows(const TensorDesc& x, const TensorDesc& w, const TensorDesc& y, const Attrs& a) {
  if (w.dtype != DType::Float32 || x.dtype != DType::Float32 || y.dtype != DType::Float32 ||
      x.shape.size() != 4 || y.shape.size() != 4 || w.shape.size() != 4)
    return 0;
  if (!stride1_3x3(w.shape, a) || w.shape[1] != x.shape[1]) return 0;
  const int64_t rows = y.shape[2];
  if (x.shape[1] < kMinChannels || y.shape[1] < kMinChannels || rows < kMinRows) return 0;
  return rows % 4 == 0 || rows >= 16 ? 4 : 2;
}

namespace {

// The m of an nn.conv2d (its weight a constant) or of a channel-blocked
// conv (nn.conv2d_blocked of blocked data, its weight a blocked constant)
// to run by F(m, 3); 0: none.
int64_t tile_rows_of(const CallNode& c, const TensorDesc* y) {
  const ConstantNode* w = as<ConstantNode>(c.args[1]);
  const TensorDesc* x = tensor_desc(c.args[0]);
  if (!w || !x || !y) return 0;
  if (c.op->name == "nn.conv2d")
    return winograd_tile_rows(*x, {w->value.shape(), w->value.dtype()}, *y, c.attrs);
  if (c.op->name != "nn.conv2d_blocked" || x->shape.size() != 5 || y->shape.size() != 5 ||
      w->value.ndim() != 6 || !stride1_3x3(w->value.shape(), c.attrs))
    return 0;
  return blocked_winograd_tile_rows(y->shape[0], y->shape[2], y->shape[3]);
}

// The Winograd form of `value` when it is such a conv; else null.
Expr winograd_conv(const Expr& value) {
  const CallNode* c = as<CallNode>(value);
  if (!c || !c->is_op_call() || c->args.size() != 2) return nullptr;
  const int64_t m = tile_rows_of(*c, tensor_desc(value));
  if (m == 0) return nullptr;
  Attrs wa;
  wa.set("tile_rows", m);
  Attrs ca;
  ca.set("padding", c->attrs.get_ints("padding"));
  ca.set("tile_rows", m);
  return make_op_call("nn.conv2d_winograd",
                      {c->args[0], make_op_call("nn.winograd_weight", {c->args[1]}, wa)}, ca);
}

Function rewrite(const FunctionNode& f) {
  std::vector<Binding> out;
  bool changed = false;
  for (const Binding& b : f.bindings) {
    Expr conv = winograd_conv(b.value);
    out.push_back({b.var, conv ? conv : b.value});
    changed |= conv != nullptr;
  }
  if (!changed) return nullptr;
  return make_function(f.name, f.params, std::move(out), f.result, f.attrs);
}

}  // namespace

Module winograd_weights(const Module& m) { return rewrite_host_functions(m, rewrite); }

}  // namespace kiln
