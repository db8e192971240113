// matmul and nn.dense: reference kernels.
//
// matmul(a, b) follows numpy.matmul: a 1-D `a` is read as a row (1, K) and a
// 1-D `b` as a column (K, 1), and the added axis is dropped from the result;
// dims before the last two are batch dims and broadcast like numpy.
// nn.dense(x [..., K], w [N, K]) = x @ w^T, of shape [..., N].
//
// A constant right operand packed at compile time (the pass
// pack-matmul-weights, src/transform/pack_matmul_weights.cc):
// nn.pack_matmul_weight(w) {columns, transpose} -> (P, K, columns), where w
//   is (K, N) (transpose=0: matmul's b) or (N, K) (transpose=1: dense's w)
//   and P = ceil(N / columns): panel p holds columns p * columns onwards of
//   the (K, N) matrix, each of its K rows contiguous, zeros past N.
// nn.matmul_packed(x [..., K], wp (P, K, c)) {units} -> [..., units]:
//   x @ W for the (K, N = units) matrix W that wp packs, so that
//   matmul_packed(a, pack_matmul_weight(b, columns=c), units=N) == matmul(a, b)
//   for a 2-D b (and nn.dense with transpose=1). float32, or:
// An int8 weight packs its rows in groups of four, for byte dot products
// (four uint8 x int8 products summed into an int32 lane): (P, ceil(K / 4),
// columns, 4), element [p, r / 4, j, r % 4] = w[r, p * columns + j], zeros
// past K and N; nn.matmul_packed of uint8 data by such a weight gives the
// int32 product (the sums exact), as matmul(x, w) does. An int16 weight
// packs its rows in pairs, (P, ceil(K / 2), columns, 2), for dot products
// of two int16 (vpmaddwd), and uint8 data by it gives the same int32
// product.
//
// Both take out_dtype="" (float32 -> float32, float16 -> float16,
// int8/uint8/int32 -> int32). float16 computes in float32 and rounds once at
// the end; int8/uint8 (which may mix) accumulate exactly in int32, and so do
// int32 operands (8-bit values with a zero point subtracted, the ONNX
// MatMulInteger/QLinearMatMul decomposition) while the sums stay within int32.
//
// Speed: the core computes 4x8 blocks of C in registers, reading contiguous
// rows of B (vectorised without reassociating float sums, so every element is
// summed in order of k); dense transposes w once to get there.
#include <algorithm>
#include <vector>

#include "op/nn_internal.h"

namespace kiln {
namespace {

// Columns and rows of C computed per block: fixed counts, so the loops over
// them have constant trip counts and the accumulators stay in vector
// registers (the -O2 cost model vectorises only such loops).
constexpr int64_t kGemmCols = 8;
constexpr int64_t kGemmRows = 4;

// C[i0 .. i0+R, j0 .. j0+kGemmCols) of c = a @ b.
template <typename Acc, int R>
void gemm_block(const Acc* a, const Acc* b, Acc* c, int64_t k, int64_t n, int64_t i0, int64_t j0) {
  Acc acc[R][kGemmCols] = {};
  for (int64_t p = 0; p < k; ++p) {
    Acc bv[kGemmCols];
    for (int64_t j = 0; j < kGemmCols; ++j) bv[j] = b[p * n + j0 + j];
    for (int r = 0; r < R; ++r) {
      const Acc av = a[(i0 + r) * k + p];
      for (int64_t j = 0; j < kGemmCols; ++j) acc[r][j] += av * bv[j];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < kGemmCols; ++j) c[(i0 + r) * n + j0 + j] = acc[r][j];
}

// c (m x n) = a (m x k) @ b (k x n), all row-major.
template <typename Acc>
void gemm(const Acc* a, const Acc* b, Acc* c, int64_t m, int64_t k, int64_t n) {
  const int64_t n_blocked = n / kGemmCols * kGemmCols;
  for (int64_t i0 = 0; i0 < m;) {
    const int64_t rows = m - i0 >= kGemmRows ? kGemmRows : 1;
    for (int64_t j0 = 0; j0 < n_blocked; j0 += kGemmCols) {
      if (rows == kGemmRows)
        gemm_block<Acc, kGemmRows>(a, b, c, k, n, i0, j0);
      else
        gemm_block<Acc, 1>(a, b, c, k, n, i0, j0);
    }
    // The columns left over after the blocks, one dot product each.
    for (int64_t i = i0; i < i0 + rows; ++i)
      for (int64_t j = n_blocked; j < n; ++j) {
        Acc s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
        c[i * n + j] = s;
      }
    i0 += rows;
  }
}

// ---- matmul ---------------------------------------------------------------

const char* kMatmul = "matmul";

// Shapes of a matmul seen as batched 2-D products.
struct MatmulShape {
  Shape a_batch, b_batch, batch;
  int64_t m = 1, k = 1, n = 1;
  Shape out;
};

MatmulShape matmul_shape(const Shape& a, const Shape& b) {
  const std::string op = kMatmul;
  if (a.empty() || b.empty())
    throw Error(op + ": operands must have rank >= 1, got shapes " + shape_str(a) + " and " + shape_str(b));
  MatmulShape s;
  s.m = a.size() == 1 ? 1 : a[a.size() - 2];
  s.k = a.back();
  int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  s.n = b.size() == 1 ? 1 : b.back();
  if (s.k != kb)
    throw Error(op + ": a of shape " + shape_str(a) + " has " + std::to_string(s.k) +
                " columns but b of shape " + shape_str(b) + " has " + std::to_string(kb) +
                " rows; they must be equal");
  if (a.size() > 2) s.a_batch.assign(a.begin(), a.end() - 2);
  if (b.size() > 2) s.b_batch.assign(b.begin(), b.end() - 2);
  s.batch = broadcast_shapes(op, s.a_batch, s.b_batch);
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.m);
  if (b.size() > 1) s.out.push_back(s.n);
  return s;
}

std::vector<TensorDesc> infer_matmul(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  check_mul_operands(kMatmul, "a", in[0].dtype, "b", in[1].dtype);
  MatmulShape s = matmul_shape(in[0].shape, in[1].shape);
  return {{s.out, resolve_out_dtype(kMatmul, in[0].dtype, attrs)}};
}

template <typename Acc>
void matmul_impl(const Tensor& a, const Tensor& b, Tensor& out) {
  MatmulShape s = matmul_shape(a.shape(), b.shape());
  AccBuffer<Acc> ab(a), bb(b);
  const int64_t mat_a = s.m * s.k, mat_b = s.k * s.n, mat_c = s.m * s.n;
  std::vector<Acc> c(static_cast<size_t>(mat_c));
  // Batch strides counted in matrices; for_each_row walks the broadcast batch.
  for_each_row<2>(
      s.batch, {broadcast_strides(s.a_batch, s.batch), broadcast_strides(s.b_batch, s.batch)},
      [&](int64_t out_off, std::array<int64_t, 2> offs, int64_t count, std::array<int64_t, 2> inner) {
        for (int64_t i = 0; i < count; ++i) {
          const Acc* am = ab.data() + (offs[0] + i * inner[0]) * mat_a;
          const Acc* bm = bb.data() + (offs[1] + i * inner[1]) * mat_b;
          gemm(am, bm, c.data(), s.m, s.k, s.n);
          store_acc(c.data(), mat_c, out, (out_off + i) * mat_c);
        }
      });
}

void matmul_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (is_int_acc_input(in[0].dtype()))
    matmul_impl<int32_t>(in[0], in[1], out[0]);
  else
    matmul_impl<float>(in[0], in[1], out[0]);
}

// ---- dense ----------------------------------------------------------------

const char* kDense = "nn.dense";

std::vector<TensorDesc> infer_dense(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kDense;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  check_mul_operands(op, "data", x.dtype, "weight", w.dtype);
  if (x.shape.empty()) throw Error(op + ": data must have rank >= 1, got a scalar");
  if (w.shape.size() != 2)
    throw Error(op + ": weight must be 2-D (units, K), got shape " + shape_str(w.shape));
  if (w.shape[1] != x.shape.back())
    throw Error(op + ": weight of shape " + shape_str(w.shape) + " has K=" + std::to_string(w.shape[1]) +
                " but data of shape " + shape_str(x.shape) + " has K=" + std::to_string(x.shape.back()));
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(w.shape[0]);
  return {{out, resolve_out_dtype(op, x.dtype, attrs)}};
}

template <typename Acc>
void dense_impl(const Tensor& x, const Tensor& w, Tensor& out) {
  const int64_t n = w.dim(0), k = w.dim(1);
  const int64_t m = k == 0 ? out.numel() / std::max<int64_t>(n, 1) : x.numel() / k;
  AccBuffer<Acc> xb(x), wb(w);
  std::vector<Acc> wt(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) wt[static_cast<size_t>(p * n + j)] = wb.data()[j * k + p];
  std::vector<Acc> c(static_cast<size_t>(m * n));
  gemm(xb.data(), wt.data(), c.data(), m, k, n);
  store_acc(c.data(), m * n, out, 0);
}

void dense_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (is_int_acc_input(in[0].dtype()))
    dense_impl<int32_t>(in[0], in[1], out[0]);
  else
    dense_impl<float>(in[0], in[1], out[0]);
}

// ---- pack_matmul_weight / matmul_packed -----------------------------------

const char* kPack = "nn.pack_matmul_weight";
const char* kPacked = "nn.matmul_packed";

std::vector<TensorDesc> infer_pack(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kPack;
  const TensorDesc& w = in[0];
  if (w.dtype != DType::Float32 && w.dtype != DType::Int8 && w.dtype != DType::Int16)
    throw Error(op + ": weight must be float32, int8 or int16, got " + std::string(dtype_name(w.dtype)));
  if (w.shape.size() != 2) throw Error(op + ": weight must be 2-D, got shape " + shape_str(w.shape));
  const int64_t columns = attrs.get_int("columns"), transpose = attrs.get_int("transpose");
  if (columns < 1) throw Error(op + ": attribute 'columns' = " + std::to_string(columns) + " must be >= 1");
  if (transpose != 0 && transpose != 1)
    throw Error(op + ": attribute 'transpose' = " + std::to_string(transpose) + " must be 0 or 1");
  const int64_t k = w.shape[transpose ? 1 : 0], n = w.shape[transpose ? 0 : 1];
  const int64_t panels = n == 0 ? 0 : (n - 1) / columns + 1;
  if (const int64_t g = dot_group(w.dtype)) return {{{panels, (k + g - 1) / g, columns, g}, w.dtype}};
  return {{{panels, k, columns}, w.dtype}};
}

// Element (r, col) of the (K, N) matrix that `w` is (transposed or not).
template <typename T>
T weight_at(const Tensor& w, bool transpose, int64_t r, int64_t col) {
  const int64_t n = w.dim(transpose ? 0 : 1), k = w.dim(transpose ? 1 : 0);
  if (r >= k || col >= n) return T(0);
  return w.data<T>()[transpose ? col * k + r : r * n + col];
}

void pack_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& w = in[0];
  const bool transpose = attrs.get_int("transpose") != 0;
  const int64_t k = w.dim(transpose ? 1 : 0), c = out[0].dim(2);
  if (const int64_t rows = dot_group(w.dtype())) {
    const int64_t groups = out[0].dim(1);
    for (int64_t p = 0; p < out[0].dim(0); ++p)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t j = 0; j < c; ++j)
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t at = ((p * groups + g) * c + j) * rows + i, r = g * rows + i, col = p * c + j;
            if (rows == 4)
              out[0].data<int8_t>()[at] = weight_at<int8_t>(w, transpose, r, col);
            else
              out[0].data<int16_t>()[at] = weight_at<int16_t>(w, transpose, r, col);
          }
    return;
  }
  float* dst = out[0].data<float>();
  for (int64_t p = 0; p < out[0].dim(0); ++p)
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < c; ++j) dst[(p * k + r) * c + j] = weight_at<float>(w, transpose, r, p * c + j);
}

std::vector<TensorDesc> infer_packed(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kPacked;
  const TensorDesc &x = in[0], &w = in[1];
  // uint8 data by an int8 weight packed in groups of four rows, or an
  // int16 one in pairs.
  const bool bytes = x.dtype == DType::UInt8;
  const int64_t g = dot_group(w.dtype);
  if (bytes && !g)
    throw Error(op + ": uint8 data needs an int8 or int16 packed weight, got " +
                std::string(dtype_name(w.dtype)));
  if (!bytes) {
    require_float32(op, "data", x);
    require_float32(op, "packed weight", w);
  }
  if (x.shape.empty()) throw Error(op + ": data must have rank >= 1, got a scalar");
  if (!bytes && w.shape.size() != 3)
    throw Error(op + ": packed weight must be 3-D (panels, K, columns), got shape " + shape_str(w.shape));
  if (bytes && (w.shape.size() != 4 || w.shape[3] != g))
    throw Error(op + ": an " + std::string(dtype_name(w.dtype)) + " packed weight must be 4-D (panels, K / " +
                std::to_string(g) + ", columns, " + std::to_string(g) + "), got shape " + shape_str(w.shape));
  const int64_t units = attrs.get_int("units");
  if (units < 1 || w.shape[2] < 1 || (units - 1) / w.shape[2] + 1 != w.shape[0])
    throw Error(op + ": attribute 'units' = " + std::to_string(units) + " does not fit packed weight " +
                shape_str(w.shape) + ": its last panel must hold column units - 1");
  const int64_t k = x.shape.back();
  if (w.shape[1] != (bytes ? (k + g - 1) / g : k))
    throw Error(op + ": packed weight of shape " + shape_str(w.shape) + " has " +
                (bytes ? "K / " + std::to_string(g) + "=" : std::string("K=")) + std::to_string(w.shape[1]) +
                " but data of shape " + shape_str(x.shape) + " has K=" + std::to_string(k));
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(units);
  return {{out, bytes ? DType::Int32 : x.dtype}};
}

// Unpacks the weight and runs the reference product: the definition above.
void packed_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor &x = in[0], &w = in[1];
  const int64_t c = w.dim(2), n = attrs.get_int("units");
  if (x.dtype() == DType::UInt8) {
    const int64_t k = x.dim(x.ndim() - 1), groups = w.dim(1), g = w.dim(3);
    std::vector<int32_t> b(size_t(k * n));
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < n; ++j)
        b[size_t(r * n + j)] = int32_t(w.get_as_double((((j / c) * groups + r / g) * c + j % c) * g + r % g));
    const int64_t m = k == 0 ? out[0].numel() / n : x.numel() / k;
    AccBuffer<int32_t> xb(x);
    std::vector<int32_t> y(size_t(m * n));
    gemm(xb.data(), b.data(), y.data(), m, k, n);
    store_acc(y.data(), m * n, out[0], 0);
    return;
  }
  const int64_t k = w.dim(1);
  std::vector<float> b(size_t(k * n));
  const float* wp = w.data<float>();
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < n; ++j) b[size_t(r * n + j)] = wp[((j / c) * k + r) * c + j % c];
  const int64_t m = k == 0 ? out[0].numel() / n : x.numel() / k;
  gemm(x.data<float>(), b.data(), out[0].data<float>(), m, k, n);
}

}  // namespace

void register_nn_matmul_ops(OpRegistry& r) {
  std::vector<AttrSpec> attrs = {{"out_dtype", AttrKind::String, std::string()}};
  r.add({kMatmul, "matrix product with numpy.matmul semantics (batched, broadcasting)", 2, 2, attrs, false,
         infer_matmul, matmul_kernel});
  r.add({kDense, "fully connected layer: x @ w^T with w of shape (units, K)", 2, 2, attrs, false, infer_dense,
         dense_kernel});
  r.add(
      {kPack,
       "a product's constant right operand in panels of columns: (K, N) or (N, K) -> (ceil(N / columns), K, "
       "columns); int8 in groups of four rows: (ceil(N / columns), ceil(K / 4), columns, 4); int16 in pairs",
       1,
       1,
       {{"columns", AttrKind::Int, std::nullopt}, {"transpose", AttrKind::Int, int64_t{0}}},
       false,
       infer_pack,
       pack_kernel});
  r.add({kPacked,
         "x @ W with W packed by nn.pack_matmul_weight: [..., K] -> [..., units] (uint8 by int8 or int16: "
         "int32)",
         2,
         2,
         {{"units", AttrKind::Int, std::nullopt}},
         false,
         infer_packed,
         packed_kernel});
}

}  // namespace kiln
