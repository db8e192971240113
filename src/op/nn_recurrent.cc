// Recurrent layers: nn.rnn, nn.gru and nn.lstm (the ONNX RNN / GRU / LSTM
// equations, sequence-first layout).
//
// Inputs (trailing ones optional; the ONNX converter fills any gap):
//   x (seq, batch, input), w (dirs, gates*hidden, input),
//   r (dirs, gates*hidden, hidden), b (dirs, 2*gates*hidden) = [Wb, Rb],
//   sequence_lens (batch,) int32/int64, initial_h (dirs, batch, hidden),
//   and for nn.lstm initial_c (dirs, batch, hidden), p (dirs, 3*hidden).
// Gate order in w/r/b: rnn one gate; gru z, r, h; lstm i, o, f, c; p: i, o, f.
// The result is a tuple (y (seq, dirs, batch, hidden), y_h (dirs, batch,
// hidden)[, y_c (dirs, batch, hidden)]). Steps at or past a batch entry's
// sequence length give zeros in y and leave its state alone, so y_h / y_c are
// the state after its last valid step (for the reverse direction, step 0).
//
// Attributes: hidden_size; direction (forward, reverse, bidirectional);
// activations, a comma list with one function per gate role and direction
// (rnn: f; gru: f, g; lstm: f, g, h; empty: the ONNX defaults) and
// activation_alpha / activation_beta, consumed in order by the functions
// that take them (the others, and any past the list, use the defaults of the
// ONNX operator of that name); clip (> 0: gate pre-activations are clipped to
// [-clip, clip]; 0: none); gru linear_before_reset; lstm input_forget.
// float32 only.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "op/kernel_util.h"
#include "op/nn_recurrent.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

enum class Cell { Rnn, Gru, Lstm };

const char* cell_op_name(Cell c) {
  switch (c) {
    case Cell::Rnn:
      return "nn.rnn";
    case Cell::Gru:
      return "nn.gru";
    case Cell::Lstm:
      return "nn.lstm";
  }
  return "";
}
int64_t gate_count(Cell c) {
  switch (c) {
    case Cell::Rnn:
      return 1;
    case Cell::Gru:
      return 3;
    case Cell::Lstm:
      return 4;
  }
  return 0;
}
// How many activation functions one direction uses.
size_t activations_per_direction(Cell c) {
  switch (c) {
    case Cell::Rnn:
      return 1;
    case Cell::Gru:
      return 2;
    case Cell::Lstm:
      return 3;
  }
  return 0;
}
std::vector<std::string> default_activations(Cell c) {
  switch (c) {
    case Cell::Rnn:
      return {"Tanh"};
    case Cell::Gru:
      return {"Sigmoid", "Tanh"};
    case Cell::Lstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

enum class Act {
  Sigmoid,
  Tanh,
  Relu,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

struct ActInfo {
  const char* name;
  Act act;
  // Whether the function reads alpha / beta, and the defaults of the ONNX
  // operator of that name.
  bool takes_alpha, takes_beta;
  double alpha, beta;
};
constexpr ActInfo kActivations[] = {
    {"Sigmoid", Act::Sigmoid, false, false, 0, 0},
    {"Tanh", Act::Tanh, false, false, 0, 0},
    {"Relu", Act::Relu, false, false, 0, 0},
    {"Affine", Act::Affine, true, true, 1.0, 0.0},
    {"LeakyRelu", Act::LeakyRelu, true, false, 0.01, 0},
    {"ThresholdedRelu", Act::ThresholdedRelu, true, false, 1.0, 0},
    {"ScaledTanh", Act::ScaledTanh, true, true, 1.0, 1.0},
    {"HardSigmoid", Act::HardSigmoid, true, true, 0.2, 0.5},
    {"Elu", Act::Elu, true, false, 1.0, 0},
    {"Softsign", Act::Softsign, false, false, 0, 0},
    {"Softplus", Act::Softplus, false, false, 0, 0},
};

struct Activation {
  Act act = Act::Tanh;
  float alpha = 0;
  float beta = 0;

  float operator()(float x) const {
    switch (act) {
      case Act::Sigmoid:
        return 1.0f / (1.0f + std::exp(-x));
      case Act::Tanh:
        return std::tanh(x);
      case Act::Relu:
        return std::max(x, 0.0f);
      case Act::Affine:
        return alpha * x + beta;
      case Act::LeakyRelu:
        return x >= 0 ? x : alpha * x;
      case Act::ThresholdedRelu:
        return x > alpha ? x : 0.0f;
      case Act::ScaledTanh:
        return alpha * std::tanh(beta * x);
      case Act::HardSigmoid:
        return std::clamp(alpha * x + beta, 0.0f, 1.0f);
      case Act::Elu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1.0f);
      case Act::Softsign:
        return x / (1.0f + std::fabs(x));
      case Act::Softplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};

std::string known_activation_names() {
  std::string s;
  for (const ActInfo& a : kActivations) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

int64_t direction_count(const std::string& op, const std::string& direction) {
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  throw Error(op + ": attribute 'direction' must be forward, reverse or bidirectional, got '" + direction +
              "'");
}

bool same_name(const std::string& a, const char* b) {
  std::string lb(b);
  if (a.size() != lb.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(lb[i])))
      return false;
  return true;
}

// The activation of every (direction, role) slot, validated. As in ONNX,
// activation_alpha / activation_beta are consumed in order by the functions
// that take an alpha / beta; the others use their defaults. A bidirectional
// layer given one direction's list uses it for both.
// The names the attribute lists (the defaults when it lists none): one
// direction's, or every direction's.
std::vector<std::string> activation_names(Cell cell, const Attrs& attrs, int64_t dirs) {
  const std::string op = cell_op_name(cell);
  std::vector<std::string> names = split_list(attrs.get_string("activations"));
  const size_t per_dir = activations_per_direction(cell);
  const size_t want = per_dir * static_cast<size_t>(dirs);
  if (names.empty()) names = default_activations(cell);
  if (names.size() != want && names.size() != per_dir)
    throw Error(op + ": attribute 'activations' must list " + std::to_string(want) + " functions (" +
                std::to_string(per_dir) + " per direction), got " + std::to_string(names.size()));
  return names;
}

std::vector<Activation> parse_activations(Cell cell, const Attrs& attrs, int64_t dirs) {
  const std::string op = cell_op_name(cell);
  const std::vector<std::string> names = activation_names(cell, attrs, dirs);
  const size_t per_dir = activations_per_direction(cell);
  const size_t want = per_dir * static_cast<size_t>(dirs);
  std::vector<double> alpha = attrs.get_floats("activation_alpha");
  std::vector<double> beta = attrs.get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const ActInfo* info = nullptr;
    for (const ActInfo& a : kActivations)
      if (same_name(name, a.name)) info = &a;
    if (!info)
      throw Error(op + ": unknown activation '" + name +
                  "' in attribute 'activations' (known: " + known_activation_names() + ")");
    Activation act{info->act, static_cast<float>(info->alpha), static_cast<float>(info->beta)};
    if (info->takes_alpha && next_alpha < alpha.size()) act.alpha = static_cast<float>(alpha[next_alpha++]);
    if (info->takes_beta && next_beta < beta.size()) act.beta = static_cast<float>(beta[next_beta++]);
    out.push_back(act);
  }
  if (next_alpha < alpha.size())
    throw Error(op + ": attribute 'activation_alpha' has " + std::to_string(alpha.size()) +
                " values but the activations take only " + std::to_string(next_alpha));
  if (next_beta < beta.size())
    throw Error(op + ": attribute 'activation_beta' has " + std::to_string(beta.size()) +
                " values but the activations take only " + std::to_string(next_beta));
  while (out.size() < want) out.push_back(out[out.size() - per_dir]);
  return out;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

void require_shape(const std::string& op, const std::string& what, const Shape& got, const Shape& want,
                   const std::string& meaning) {
  if (got == want) return;
  throw Error(op + ": input " + what + " must have shape " + shape_str(want) + " (" + meaning + "), got " +
              shape_str(got));
}

template <Cell C>
std::vector<TensorDesc> recurrent_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = cell_op_name(C);
  const int64_t dirs = direction_count(op, attrs.get_string("direction"));
  const int64_t hidden = attrs.get_int("hidden_size");
  if (hidden <= 0)
    throw Error(op + ": attribute 'hidden_size' must be positive, got " + std::to_string(hidden));
  parse_activations(C, attrs, dirs);
  const TensorDesc& x = in[0];
  require_dtype(op, "input x", x.dtype, {DType::Float32});
  if (x.shape.size() != 3)
    throw Error(op + ": input x must have rank 3 (seq_length, batch_size, input_size), got " + desc_str(x));
  const int64_t seq = x.shape[0], batch = x.shape[1], input = x.shape[2];
  const int64_t gh = gate_count(C) * hidden;
  const std::string g = std::to_string(gate_count(C));
  require_dtype(op, "input w", in[1].dtype, {DType::Float32});
  require_shape(op, "w", in[1].shape, {dirs, gh, input},
                "num_directions, " + g + "*hidden_size, input_size; hidden_size = " + std::to_string(hidden));
  require_dtype(op, "input r", in[2].dtype, {DType::Float32});
  require_shape(
      op, "r", in[2].shape, {dirs, gh, hidden},
      "num_directions, " + g + "*hidden_size, hidden_size; hidden_size = " + std::to_string(hidden));
  if (in.size() > 3) {
    require_dtype(op, "input b", in[3].dtype, {DType::Float32});
    require_shape(op, "b", in[3].shape, {dirs, 2 * gh},
                  "num_directions, " + std::to_string(2 * gate_count(C)) + "*hidden_size");
  }
  if (in.size() > 4) {
    require_dtype(op, "input sequence_lens", in[4].dtype, {DType::Int32, DType::Int64});
    require_shape(op, "sequence_lens", in[4].shape, {batch}, "batch_size");
  }
  const Shape state{dirs, batch, hidden};
  if (in.size() > 5) {
    require_dtype(op, "input initial_h", in[5].dtype, {DType::Float32});
    require_shape(op, "initial_h", in[5].shape, state, "num_directions, batch_size, hidden_size");
  }
  if (in.size() > 6) {
    require_dtype(op, "input initial_c", in[6].dtype, {DType::Float32});
    require_shape(op, "initial_c", in[6].shape, state, "num_directions, batch_size, hidden_size");
  }
  if (in.size() > 7) {
    require_dtype(op, "input p", in[7].dtype, {DType::Float32});
    require_shape(op, "p", in[7].shape, {dirs, 3 * hidden}, "num_directions, 3*hidden_size");
  }
  if (attrs.get_float("clip") < 0)
    throw Error(op + ": attribute 'clip' must be >= 0 (0: no clipping), got " +
                std::to_string(attrs.get_float("clip")));
  std::vector<TensorDesc> out{{{seq, dirs, batch, hidden}, DType::Float32}, {state, DType::Float32}};
  if (C == Cell::Lstm) out.push_back({state, DType::Float32});
  return out;
}

// out[j] += sum_k m[j, k] * v[k] for a rows x cols row-major matrix.
void add_matvec(const float* m, int64_t rows, int64_t cols, const float* v, float* out) {
  for (int64_t j = 0; j < rows; ++j) {
    float acc = 0;
    const float* row = m + j * cols;
    for (int64_t k = 0; k < cols; ++k) acc += row[k] * v[k];
    out[j] += acc;
  }
}

// One direction's weights.
struct Weights {
  const float* w;   // (gates*hidden, input)
  const float* r;   // (gates*hidden, hidden)
  const float* wb;  // (gates*hidden)
  const float* rb;  // (gates*hidden)
  const float* p;   // (3*hidden), lstm only
};

struct StepConfig {
  int64_t hidden, input;
  float clip;  // 0: none
  const Activation* act;
  bool linear_before_reset, input_forget;
  float clipped(float v) const { return clip > 0 ? std::clamp(v, -clip, clip) : v; }
};

// Advances h (and c) by one time step of input x.
void rnn_step(const StepConfig& s, const Weights& wt, const float* x, std::vector<float>& h,
              std::vector<float>&) {
  std::vector<float> a(wt.wb, wt.wb + s.hidden);
  for (int64_t j = 0; j < s.hidden; ++j) a[j] += wt.rb[j];
  add_matvec(wt.w, s.hidden, s.input, x, a.data());
  add_matvec(wt.r, s.hidden, s.hidden, h.data(), a.data());
  for (int64_t j = 0; j < s.hidden; ++j) h[j] = s.act[0](s.clipped(a[j]));
}

void gru_step(const StepConfig& s, const Weights& wt, const float* x, std::vector<float>& h,
              std::vector<float>&) {
  const int64_t H = s.hidden;
  std::vector<float> xw(wt.wb, wt.wb + 3 * H);  // x W^T + Wb for z, r, h
  add_matvec(wt.w, 3 * H, s.input, x, xw.data());
  std::vector<float> hr(wt.rb, wt.rb + 2 * H);  // h R^T + Rb for z, r
  add_matvec(wt.r, 2 * H, H, h.data(), hr.data());
  std::vector<float> z(H), r(H);
  for (int64_t j = 0; j < H; ++j) {
    z[j] = s.act[0](s.clipped(xw[j] + hr[j]));
    r[j] = s.act[0](s.clipped(xw[H + j] + hr[H + j]));
  }
  std::vector<float> rh(wt.rb + 2 * H, wt.rb + 3 * H);
  const float* rh_weights = wt.r + 2 * H * H;
  if (s.linear_before_reset) {
    add_matvec(rh_weights, H, H, h.data(), rh.data());
    for (int64_t j = 0; j < H; ++j) rh[j] *= r[j];
  } else {
    std::vector<float> gated(H);
    for (int64_t j = 0; j < H; ++j) gated[j] = r[j] * h[j];
    add_matvec(rh_weights, H, H, gated.data(), rh.data());
  }
  for (int64_t j = 0; j < H; ++j) {
    float cand = s.act[1](s.clipped(xw[2 * H + j] + rh[j]));
    h[j] = (1.0f - z[j]) * cand + z[j] * h[j];
  }
}

void lstm_step(const StepConfig& s, const Weights& wt, const float* x, std::vector<float>& h,
               std::vector<float>& c) {
  const int64_t H = s.hidden;
  std::vector<float> a(4 * H);  // i, o, f, c pre-activations without peepholes
  for (int64_t j = 0; j < 4 * H; ++j) a[j] = wt.wb[j] + wt.rb[j];
  add_matvec(wt.w, 4 * H, s.input, x, a.data());
  add_matvec(wt.r, 4 * H, H, h.data(), a.data());
  const float* pi = wt.p;
  const float* po = wt.p + H;
  const float* pf = wt.p + 2 * H;
  for (int64_t j = 0; j < H; ++j) {
    float i = s.act[0](s.clipped(a[j] + pi[j] * c[j]));
    float f = s.input_forget ? 1.0f - i : s.act[0](s.clipped(a[2 * H + j] + pf[j] * c[j]));
    float cand = s.act[1](s.clipped(a[3 * H + j]));
    c[j] = f * c[j] + i * cand;
    float o = s.act[0](s.clipped(a[H + j] + po[j] * c[j]));
    h[j] = o * s.act[2](c[j]);
  }
}

template <Cell C>
void recurrent_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const std::string op = cell_op_name(C);
  const std::string direction = attrs.get_string("direction");
  const int64_t dirs = direction_count(op, direction);
  const std::vector<Activation> acts = parse_activations(C, attrs, dirs);
  const Tensor& x = in[0];
  const int64_t seq = x.shape()[0], batch = x.shape()[1], input = x.shape()[2];
  const int64_t H = attrs.get_int("hidden_size");
  const int64_t gh = gate_count(C) * H;
  auto present = [&](size_t i) { return in.size() > i; };

  std::vector<float> zeros_b(static_cast<size_t>(2 * gh), 0.0f), zeros_p(static_cast<size_t>(3 * H), 0.0f);
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (present(4))
    for (int64_t b = 0; b < batch; ++b) {
      double v = in[4].get_as_double(b);
      if (v < 0 || v > static_cast<double>(seq))
        throw Error(op + ": sequence_lens[" + std::to_string(b) +
                    "] = " + std::to_string(static_cast<int64_t>(v)) + " is out of range (expected 0.." +
                    std::to_string(seq) + ")");
      lens[static_cast<size_t>(b)] = static_cast<int64_t>(v);
    }

  float* y = out[0].data<float>();
  float* y_h = out[1].data<float>();
  float* y_c = C == Cell::Lstm ? out[2].data<float>() : nullptr;
  std::fill(y, y + out[0].numel(), 0.0f);
  const float* px = x.data<float>();

  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    Weights wt;
    wt.w = in[1].data<float>() + d * gh * input;
    wt.r = in[2].data<float>() + d * gh * H;
    const float* bias = present(3) ? in[3].data<float>() + d * 2 * gh : zeros_b.data();
    wt.wb = bias;
    wt.rb = bias + gh;
    wt.p = present(7) ? in[7].data<float>() + d * 3 * H : zeros_p.data();
    StepConfig cfg{H,
                   input,
                   static_cast<float>(attrs.get_float("clip")),
                   acts.data() + static_cast<size_t>(d) * activations_per_direction(C),
                   C == Cell::Gru && attrs.get_int("linear_before_reset") != 0,
                   C == Cell::Lstm && attrs.get_int("input_forget") != 0};
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t state_at = (d * batch + b) * H;
      std::vector<float> h(static_cast<size_t>(H), 0.0f), c(static_cast<size_t>(H), 0.0f);
      if (present(5)) std::copy_n(in[5].data<float>() + state_at, H, h.begin());
      if (present(6)) std::copy_n(in[6].data<float>() + state_at, H, c.begin());
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = reverse ? len - 1 - k : k;
        const float* xt = px + (t * batch + b) * input;
        if (C == Cell::Rnn) rnn_step(cfg, wt, xt, h, c);
        if (C == Cell::Gru) gru_step(cfg, wt, xt, h, c);
        if (C == Cell::Lstm) lstm_step(cfg, wt, xt, h, c);
        std::copy(h.begin(), h.end(), y + ((t * dirs + d) * batch + b) * H);
      }
      std::copy(h.begin(), h.end(), y_h + state_at);
      if (y_c) std::copy(c.begin(), c.end(), y_c + state_at);
    }
  }
}

std::vector<AttrSpec> common_attrs() {
  return {{"hidden_size", AttrKind::Int, std::nullopt},
          {"direction", AttrKind::String, AttrValue(std::string("forward"))},
          {"activations", AttrKind::String, AttrValue(std::string())},
          {"activation_alpha", AttrKind::Floats, AttrValue(std::vector<double>{})},
          {"activation_beta", AttrKind::Floats, AttrValue(std::vector<double>{})},
          {"clip", AttrKind::Float, AttrValue(0.0)}};
}

}  // namespace

std::vector<std::string> recurrent_activations(const std::string& op, const Attrs& attrs) {
  const Cell cell = op == "nn.rnn" ? Cell::Rnn : op == "nn.gru" ? Cell::Gru : Cell::Lstm;
  const int64_t dirs = direction_count(op, attrs.get_string("direction"));
  std::vector<std::string> names = activation_names(cell, attrs, dirs);
  const size_t per_dir = activations_per_direction(cell);
  for (size_t k = per_dir; names.size() < per_dir * static_cast<size_t>(dirs); ++k)
    names.push_back(names[k - per_dir]);
  return names;
}

void register_recurrent_ops(OpRegistry& r) {
  r.add({"nn.rnn", "simple recurrent layer (ONNX RNN): tuple (y, y_h)", 3, 6, common_attrs(), true,
         recurrent_infer<Cell::Rnn>, recurrent_kernel<Cell::Rnn>});
  std::vector<AttrSpec> gru = common_attrs();
  gru.push_back({"linear_before_reset", AttrKind::Int, AttrValue(int64_t{0})});
  r.add({"nn.gru", "gated recurrent unit layer (ONNX GRU): tuple (y, y_h)", 3, 6, gru, true,
         recurrent_infer<Cell::Gru>, recurrent_kernel<Cell::Gru>});
  std::vector<AttrSpec> lstm = common_attrs();
  lstm.push_back({"input_forget", AttrKind::Int, AttrValue(int64_t{0})});
  r.add({"nn.lstm", "long short-term memory layer (ONNX LSTM): tuple (y, y_h, y_c)", 3, 8, lstm, true,
         recurrent_infer<Cell::Lstm>, recurrent_kernel<Cell::Lstm>});
}

}  // namespace kiln
