// Signal-processing ops: signal.dft (ONNX DFT; STFT imports as frames, a
// window product and signal.dft).
//
// Semantics: signal.dft(x; axis, inverse=0, onesided=0, length=0) takes a
// float tensor whose last axis holds one (real) or two (real, imaginary)
// components and transforms along `axis` (in [0, rank - 1), not the
// component axis). L = length, or x's extent along axis when length is 0;
// the signal is truncated or zero-padded to L samples. The result has two
// components and, along axis, L values, or L / 2 + 1 when onesided (the
// rest of a real signal's spectrum is their complex conjugate):
//
//   forward  X[k] = sum_n x[n] e^(-2 pi i k n / L)
//   inverse  x[n] = 1/L sum_k X[k] e^(+2 pi i k n / L)
//
// computed directly in double (O(L^2) per transform, twiddles from one
// table of L roots) and rounded once to x's dtype. onesided needs a real
// input and the forward direction.
#include <cmath>
#include <complex>
#include <string>
#include <type_traits>
#include <vector>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr int64_t kMaxDftLength = int64_t{1} << 24;

struct DftParams {
  int64_t axis = 0;
  int64_t length = 0;   // L
  int64_t out_len = 0;  // along axis in the result
  bool inverse = false;
};

DftParams dft_params(const TensorDesc& x, const Attrs& attrs) {
  const std::string op = "signal.dft";
  require_dtype(op, "input", x.dtype, {DType::Float32, DType::Float64, DType::Float16});
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2 || (x.shape.back() != 1 && x.shape.back() != 2))
    throw Error(op + ": input " + shape_str(x.shape) +
                " must have rank 2 or more and a last axis of 1 (real) or 2 (real, imaginary) components");
  DftParams p;
  p.axis = attrs.get_int("axis");
  if (p.axis < 0 || p.axis >= rank - 1)
    throw Error(op + ": attribute 'axis' = " + std::to_string(p.axis) + " must be in [0, " +
                std::to_string(rank - 2) + "] (an axis of " + shape_str(x.shape) +
                " before the component axis)");
  p.length = attrs.get_int("length");
  if (p.length == 0) p.length = x.shape[static_cast<size_t>(p.axis)];
  if (p.length < 1 || p.length > kMaxDftLength)
    throw Error(op + ": the transform length " + std::to_string(p.length) + " is out of range (1 to 2^24)");
  p.inverse = attrs.get_int("inverse") != 0;
  const bool onesided = attrs.get_int("onesided") != 0;
  if (onesided && (p.inverse || x.shape.back() != 1))
    throw Error(op + ": onesided needs a real input (last axis 1) and the forward transform");
  p.out_len = onesided ? p.length / 2 + 1 : p.length;
  return p;
}

std::vector<TensorDesc> dft_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  DftParams p = dft_params(in[0], attrs);
  Shape out = in[0].shape;
  out[static_cast<size_t>(p.axis)] = p.out_len;
  out.back() = 2;
  return {{out, in[0].dtype}};
}

void dft_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const DftParams p = dft_params({x.shape(), x.dtype()}, attrs);
  const Shape& s = x.shape();
  const int64_t comps = s.back();
  const int64_t n_in = s[static_cast<size_t>(p.axis)];
  const int64_t used = std::min(n_in, p.length);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < p.axis; ++a) outer *= s[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(p.axis) + 1; a + 1 < s.size(); ++a) inner *= s[a];
  // roots[j] = e^(-+2 pi i j / L); the exponent k n is taken mod L.
  const double sign = p.inverse ? 1.0 : -1.0;
  std::vector<std::complex<double>> roots(static_cast<size_t>(p.length));
  for (int64_t j = 0; j < p.length; ++j) {
    double phase = 2.0 * M_PI * static_cast<double>(j) / static_cast<double>(p.length);
    roots[static_cast<size_t>(j)] = {std::cos(phase), sign * std::sin(phase)};
  }
  const double scale = p.inverse ? 1.0 / static_cast<double>(p.length) : 1.0;
  std::vector<std::complex<double>> line(static_cast<size_t>(used));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_floating_point_v<C>) {
      const S* src = x.data<S>();
      S* dst = y.data<S>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          for (int64_t n = 0; n < used; ++n) {
            const S* e = src + ((o * n_in + n) * inner + i) * comps;
            double re = static_cast<double>(Tag::load(e[0]));
            double im = comps == 2 ? static_cast<double>(Tag::load(e[1])) : 0.0;
            line[static_cast<size_t>(n)] = {re, im};
          }
          for (int64_t k = 0; k < p.out_len; ++k) {
            std::complex<double> acc = 0;
            for (int64_t n = 0; n < used; ++n)
              acc += line[static_cast<size_t>(n)] * roots[static_cast<size_t>((k * n) % p.length)];
            acc *= scale;
            S* e = dst + ((o * p.out_len + k) * inner + i) * 2;
            e[0] = Tag::store(static_cast<C>(acc.real()));
            e[1] = Tag::store(static_cast<C>(acc.imag()));
          }
        }
    } else {
      KILN_ASSERT(false, "signal.dft dtype passed inference");
    }
  });
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  OpDef d;
  d.name = "signal.dft";
  d.summary = "discrete Fourier transform along one axis (components in the last axis)";
  d.min_inputs = d.max_inputs = 1;
  d.attrs = {{"axis", AttrKind::Int, std::nullopt},
             {"inverse", AttrKind::Int, AttrValue(int64_t{0})},
             {"onesided", AttrKind::Int, AttrValue(int64_t{0})},
             {"length", AttrKind::Int, AttrValue(int64_t{0})}};
  d.infer = dft_infer;
  d.kernel = dft_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
