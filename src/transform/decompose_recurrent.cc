// decompose-recurrent: nn.rnn, nn.gru and nn.lstm become the products and
// elementwise ops of their time steps, unrolled, so a recurrent layer runs
// as compiled matmuls and fused gate kernels instead of the reference
// kernel's scalar loops (a CRNN's bidirectional LSTM is most of its time
// there).
//
// Per direction, the input's products for every step are one nn.dense over
// all (seq * batch) rows with the biases added once; each step then adds
// the state's product (nn.dense by R) and applies the gates (ONNX's
// equations, src/op/nn_recurrent.cc), the reverse direction walking the
// steps backwards. y is the steps' states concatenated; y_h (and y_c) the
// last ones.
//
//   %r = nn.lstm(%x, %w, %r, %b)            (seq 2, forward)
// becomes, in outline,
//   %r_xw = add(nn.dense(reshape(%x, [seq * batch, input]), w[0]), wb + rb)
//   %r_a = add(xw[0], nn.dense(h0, r[0]));  i, o, f, c~ = slices of %r_a
//   %r_c = add(multiply(sigmoid(f), c0), multiply(sigmoid(i), tanh(c~)))
//   %r_h = multiply(sigmoid(o), tanh(%r_c))           ... and step 1
//   %r = (concat of the steps' h, h, c)
//
// Requires: nothing (fold-constants afterwards slices the constant weights).
// Guarantees: the tuple the op returned, bound to the op's variable; values
// within float32 rounding of the reference (products accumulate in another
// order, sigmoid and tanh are the compiled ones). Left as they are:
// activations other than Sigmoid, Tanh and Relu. Sequence lengths below
// the number of steps mask each step: its state is kept for the batch
// entries it is past (so the reverse direction starts at each entry's last
// step, as the reference does) and its y is zero there; a length outside
// 0..seq is not checked (the reference kernel's error).
#include <optional>

#include "op/nn_recurrent.h"
#include "transform/pass.h"

namespace kiln {
namespace {

enum class Cell { Rnn, Gru, Lstm };

// The op of an activation the layer names (ONNX's names, any case).
std::optional<std::string> activation_op(const std::string& name) {
  std::string lower;
  for (char ch : name) lower += char(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "sigmoid") return "sigmoid";
  if (lower == "tanh") return "tanh";
  if (lower == "relu") return "nn.relu";
  return std::nullopt;
}

// One layer's ops, each bound to a fresh variable.
class Unroller {
 public:
  Unroller(FreshNames& fresh, const std::string& base, std::vector<Binding>& out)
      : fresh_(fresh), base_(base), out_(out) {}

  Expr call(const std::string& op, std::vector<Expr> args, const Attrs& attrs = {}) {
    Expr value = make_op_call(op, std::move(args), attrs);
    Var v = make_var(fresh_(base_ + "_" + short_name(op)), value->type);
    out_.push_back({v, std::move(value)});
    return v;
  }
  Expr slice(const Expr& x, int64_t axis, int64_t begin, int64_t end) {
    Attrs a;
    a.set("begin", std::vector<int64_t>{begin});
    a.set("end", std::vector<int64_t>{end});
    a.set("axes", std::vector<int64_t>{axis});
    return call("strided_slice", {x}, a);
  }
  Expr reshape(const Expr& x, const Shape& shape) {
    Attrs a;
    a.set("newshape", std::vector<int64_t>(shape.begin(), shape.end()));
    return call("reshape", {x}, a);
  }
  Expr concat(std::vector<Expr> parts, int64_t axis) {
    if (parts.size() == 1) return parts[0];
    Attrs a;
    a.set("axis", axis);
    return call("concat", std::move(parts), a);
  }

 private:
  static std::string short_name(const std::string& op) {
    return op.substr(op.find('.') == std::string::npos ? 0 : op.find('.') + 1);
  }
  FreshNames& fresh_;
  const std::string& base_;
  std::vector<Binding>& out_;
};

struct Layer {
  Cell cell;
  int64_t seq, batch, input, hidden, dirs, gates;
  std::vector<std::string> acts;  // per direction, per role: the ops
  double clip;
  bool linear_before_reset, input_forget;
  // Sequence lengths below the steps: each step's state kept where the
  // step is past an entry's length (the reverse direction then starts at
  // each entry's last step), and y zero there.
  bool masked;
};

// The layer of `c`, or nullopt when this pass leaves it.
std::optional<Layer> layer_of(const CallNode& c) {
  Layer l;
  const std::string& op = c.op->name;
  if (op == "nn.rnn")
    l.cell = Cell::Rnn;
  else if (op == "nn.gru")
    l.cell = Cell::Gru;
  else if (op == "nn.lstm")
    l.cell = Cell::Lstm;
  else
    return std::nullopt;
  const Shape& xs = c.args[0]->type->tensor.shape;
  l.seq = xs[0];
  l.batch = xs[1];
  l.input = xs[2];
  l.hidden = c.attrs.get_int("hidden_size");
  const std::string direction = c.attrs.get_string("direction");
  l.dirs = direction == "bidirectional" ? 2 : 1;
  l.gates = l.cell == Cell::Rnn ? 1 : l.cell == Cell::Gru ? 3 : 4;
  l.clip = c.attrs.get_float("clip");
  l.linear_before_reset = l.cell == Cell::Gru && c.attrs.get_int("linear_before_reset") != 0;
  l.input_forget = l.cell == Cell::Lstm && c.attrs.get_int("input_forget") != 0;
  // Activations with ops (alphas and betas only matter to the others).
  for (const std::string& n : recurrent_activations(op, c.attrs)) {
    auto a = activation_op(n);
    if (!a) return std::nullopt;
    l.acts.push_back(*a);
  }
  // Sequence lengths: none, all steps (a constant), or masks per step.
  l.masked = false;
  if (c.args.size() > 4) {
    const ConstantNode* lens = as<ConstantNode>(c.args[4]);
    for (int64_t b = 0; lens && b < lens->value.numel(); ++b)
      l.masked |= lens->value.get_as_double(b) != double(l.seq);
    l.masked |= !lens;
  }
  return l;
}

// The ops computing the layer bound to `b`, the tuple bound to b.var.
void unroll(const Binding& b, const CallNode& c, const Layer& l, FreshNames& fresh,
            std::vector<Binding>& out) {
  Unroller u(fresh, b.var->name, out);
  const int64_t H = l.hidden, GH = l.gates * H, B = l.batch;
  const size_t per_dir = l.acts.size() / size_t(l.dirs);
  auto arg = [&](size_t i) -> Expr { return c.args.size() > i ? c.args[i] : nullptr; };
  auto one = make_constant(Tensor::from_floats({}, {1.0f}));
  std::vector<Expr> ys, y_h, y_c;
  Expr rows = u.reshape(c.args[0], {l.seq * B, l.input});
  // The lengths as a column (batch, 1), to compare with a step.
  const Expr lens = l.masked ? u.reshape(c.args[4], {B, 1}) : nullptr;
  for (int64_t d = 0; d < l.dirs; ++d) {
    const bool reverse = c.attrs.get_string("direction") == "reverse" || d == 1;
    const std::string* act = &l.acts[size_t(d) * per_dir];
    // The direction's slice of a (dirs, ...) input, without its first axis.
    auto of_direction = [&](const Expr& x) {
      Shape s = x->type->tensor.shape;
      s.erase(s.begin());
      return u.reshape(u.slice(x, 0, d, d + 1), s);
    };
    auto gated = [&](const Expr& pre, const std::string& f) {
      Expr v = pre;
      if (l.clip > 0) {
        Attrs a;
        a.set("a_min", -l.clip);
        a.set("a_max", l.clip);
        v = u.call("clip", {v}, a);
      }
      return u.call(f, {v});
    };
    Expr w = of_direction(c.args[1]), r = of_direction(c.args[2]);
    // The biases added to the input's products: Wb + Rb, but a GRU's Rb of
    // its candidate when it is multiplied by the reset gate first.
    Expr wb, rb, rb_h;
    if (arg(3)) {
      Expr bias = of_direction(arg(3));
      wb = u.slice(bias, 0, 0, GH);
      rb = u.slice(bias, 0, GH, 2 * GH);
      if (l.linear_before_reset) {
        rb_h = u.slice(rb, 0, 2 * H, 3 * H);
        rb = u.concat({u.slice(rb, 0, 0, 2 * H), make_constant(Tensor::zeros({H}, DType::Float32))}, 0);
      }
    }
    Expr xw = u.call("nn.dense", {rows, w});
    if (wb) xw = u.call("add", {xw, u.call("add", {wb, rb})});
    xw = u.reshape(xw, {l.seq, B, GH});
    Expr p = arg(7) ? of_direction(arg(7)) : nullptr;
    Expr h = arg(5) ? of_direction(arg(5)) : make_constant(Tensor::zeros({B, H}, DType::Float32));
    Expr cell = arg(6) ? of_direction(arg(6)) : make_constant(Tensor::zeros({B, H}, DType::Float32));
    std::vector<Expr> steps(size_t(l.seq));
    for (int64_t k = 0; k < l.seq; ++k) {
      const int64_t t = reverse ? l.seq - 1 - k : k;
      const Expr h_before = h, cell_before = cell;
      Expr xt = u.reshape(u.slice(xw, 0, t, t + 1), {B, GH});
      if (l.cell == Cell::Rnn) {
        h = gated(u.call("add", {xt, u.call("nn.dense", {h, r})}), act[0]);
      } else if (l.cell == Cell::Lstm) {
        Expr a = u.call("add", {xt, u.call("nn.dense", {h, r})});
        auto gate = [&](int64_t g) { return u.slice(a, 1, g * H, (g + 1) * H); };
        // A peephole: the gate's pre-activation plus p's part times the cell.
        auto peep = [&](Expr pre, int64_t part, const Expr& of) {
          if (!p) return pre;
          return u.call("add", {pre, u.call("multiply", {u.slice(p, 0, part * H, (part + 1) * H), of})});
        };
        Expr i = gated(peep(gate(0), 0, cell), act[0]);
        Expr f = l.input_forget ? u.call("subtract", {one, i}) : gated(peep(gate(2), 2, cell), act[0]);
        Expr candidate = gated(gate(3), act[1]);
        cell = u.call("add", {u.call("multiply", {f, cell}), u.call("multiply", {i, candidate})});
        Expr o = gated(peep(gate(1), 1, cell), act[0]);
        h = u.call("multiply", {o, u.call(act[2], {cell})});
      } else {
        Expr zr = u.call("add", {u.slice(xt, 1, 0, 2 * H), u.call("nn.dense", {h, u.slice(r, 0, 0, 2 * H)})});
        Expr z = gated(u.slice(zr, 1, 0, H), act[0]);
        Expr reset = gated(u.slice(zr, 1, H, 2 * H), act[0]);
        Expr r_h = u.slice(r, 0, 2 * H, 3 * H);
        Expr rh;
        if (l.linear_before_reset) {
          rh = u.call("nn.dense", {h, r_h});
          if (rb_h) rh = u.call("add", {rh, rb_h});
          rh = u.call("multiply", {rh, reset});
        } else {
          rh = u.call("nn.dense", {u.call("multiply", {reset, h}), r_h});
        }
        Expr candidate = gated(u.call("add", {u.slice(xt, 1, 2 * H, 3 * H), rh}), act[1]);
        h = u.call("add", {u.call("multiply", {u.call("subtract", {one, z}), candidate}),
                           u.call("multiply", {z, h})});
      }
      Expr y = h;
      if (l.masked) {
        // Step t is valid for the entries whose length exceeds t.
        const DType lens_type = c.args[4]->type->tensor.dtype;
        Expr t_const = make_constant(Tensor::from_ints({}, {t}, lens_type));
        Expr valid = u.call("less", {t_const, lens});
        y = u.call("where", {valid, h, make_constant(Tensor::zeros({B, H}, DType::Float32))});
        h = u.call("where", {valid, h, h_before});
        if (l.cell == Cell::Lstm) cell = u.call("where", {valid, cell, cell_before});
      }
      steps[size_t(t)] = y;
    }
    // The states joined as rows (each a kernel input the concat copies).
    ys.push_back(u.reshape(u.concat(steps, 0), {l.seq, 1, B, H}));
    y_h.push_back(u.reshape(h, {1, B, H}));
    if (l.cell == Cell::Lstm) y_c.push_back(u.reshape(cell, {1, B, H}));
  }
  std::vector<Expr> fields = {u.concat(ys, 1), u.concat(y_h, 0)};
  if (l.cell == Cell::Lstm) fields.push_back(u.concat(y_c, 0));
  out.push_back({b.var, make_tuple(fields)});
}

}  // namespace

Module decompose_recurrent(const Module& m) {
  return rewrite_bindings(m, [](const Binding& b, FreshNames& fresh, std::vector<Binding>& out) {
    const CallNode* c = as<CallNode>(b.value);
    std::optional<Layer> l;
    if (c && c->is_op_call()) l = layer_of(*c);
    if (!l) return false;
    unroll(b, *c, *l, fresh, out);
    return true;
  });
}

}  // namespace kiln
