// Shape ops as tensor expressions: index arithmetic only, so they inline
// into whatever reads them (a reshape feeding an add costs nothing).
//
//   reshape(x: (2, 6), newshape=[3, 4])  =>  y[i, j] = x[(i*4 + j) / 6, (i*4 + j) mod 6]
//   permute_dims(x, axes=[1, 0])         =>  y[i, j] = x[j, i]
//   concat(a: (2, 3), b: (2, 5), axis=1) =>  y[i, j] = select(j < 3, a[i, min(j, 2)], b[i, max(j - 3, 0)])
//
// reshape, flatten, squeeze and expand_dims keep the element order, so each
// is the row-major linear index of the output read back in the input's
// shape. take reads the positions it selects from its indices:
//
//   take(x: (5, 3), idx: (2,), axis=0)   =>  y[j, k] = x[select(idx[j] < 0, idx[j] + 5, idx[j]), k]
//
// after a loop that checks every index against [-5, 5) (IndexCheck): one
// outside fails the kernel with the reference kernel's message. take,
// gather_elements and gather_nd are kernels of their own (opaque): their
// indices must be a kernel input to be checked first. The scatters stay on
// the reference kernels. trilu keeps a triangle by a select on the positions.
#include "lower/lower.h"
#include "op/nn_internal.h"

namespace kiln::lower {
namespace {

using tir::Expr;

Lowered same_elements(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const Shape &xs = c.in[0].shape, &ys = c.out[0].shape;
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        std::vector<Expr> axes(i.begin(), i.end());
        return (*x)(unravel(linear_index(axes, ys), xs));
      },
      c.name);
  return lowered({y});
}

Lowered permute_dims(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  size_t rank = c.in[0].shape.size();
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  if (axes.empty())
    for (size_t k = rank; k-- > 0;) axes.push_back(int64_t(k));
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> idx(rank);
        for (size_t k = 0; k < rank; ++k) idx[size_t(norm_axis(axes[k], rank))] = i[k];
        return (*x)(idx);
      },
      c.name);
  return lowered({y});
}

// Inputs past which a concat copies each into its slice (an extern
// statement; inputs computed in the same kernel go to buffers first)
// instead of selecting among all of them per element: every element loads
// from every input (a clamped index) and selects, so the 80 steps' states
// of an unrolled LSTM took 0.3 ms to join.
constexpr size_t kMaxSelectedInputs = 8;

// y's slices along `axis`, each input's copied by a loop nest of its own,
// scalar: vectorized, the many short copies unroll into one block of
// thousands of vector moves that LLVM's schedulers take seconds over (160
// inputs of 256 floats: 4 s of compile time, for 0.01 ms at run time).
Lowered concat_by_copies(const LowerContext& c, size_t axis) {
  const Shape& ys = c.out[0].shape;
  std::vector<Shape> shapes;
  for (const auto& d : c.in) shapes.push_back(d.shape);
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    std::vector<tir::Stmt> copies;
    int64_t offset = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      copies.push_back(loop_nest(
          shapes[k], "c",
          [&](const std::vector<Expr>& i) {
            std::vector<Expr> at = i;
            at[axis] = tir::add(i[axis], tir::int_imm(offset));
            return tir::store(y, at, tir::load(in[k], i));
          },
          tir::ForKind::Serial));
      offset += shapes[k][axis];
    }
    return tir::seq(std::move(copies));
  };
  return lowered({te::extern_compute(ys, c.inputs[0]->dtype, c.inputs, body, c.name)});
}

Lowered concat(const LowerContext& c) {
  const Shape& ys = c.out[0].shape;
  size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), ys.size()));
  if (c.inputs.size() > kMaxSelectedInputs) return concat_by_copies(c, axis);
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        // The last input first, then a select per earlier one.
        std::vector<int64_t> offset;
        int64_t at = 0;
        for (const auto& d : c.in) {
          offset.push_back(at);
          at += d.shape[axis];
        }
        Expr v;
        for (size_t k = c.inputs.size(); k-- > 0;) {
          int64_t n = c.in[k].shape[axis];
          if (n == 0) continue;
          std::vector<Expr> idx(i.begin(), i.end());
          idx[axis] = clamp_index(tir::sub(i[axis], tir::int_imm(offset[k])), n);
          Expr load = (*c.inputs[k])(idx);
          v = v ? tir::select(tir::lt(i[axis], tir::int_imm(offset[k] + n)), load, v) : load;
        }
        return v;
      },
      c.name);
  return lowered({y});
}

Lowered split(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), c.in[0].shape.size()));
  Lowered r;
  int64_t offset = 0;
  for (size_t k = 0; k < c.out.size(); ++k) {
    r.outputs.push_back(te::compute(
        c.out[k].shape,
        [&](const te::Axes& i) {
          std::vector<Expr> idx(i.begin(), i.end());
          idx[axis] = tir::add(i[axis], tir::int_imm(offset));
          return (*x)(idx);
        },
        c.name + "_" + std::to_string(k)));
    offset += c.out[k].shape[axis];
  }
  return r;
}

Lowered strided_slice(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  std::vector<SliceAxis> plan = slice_plan(c.in[0].shape, c.attrs);
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> idx;
        for (size_t k = 0; k < plan.size(); ++k)
          idx.push_back(tir::add(tir::int_imm(plan[k].start), tir::mul(i[k], tir::int_imm(plan[k].step))));
        return (*x)(idx);
      },
      c.name);
  return lowered({y});
}

Lowered broadcast_to(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const Shape& xs = c.in[0].shape;
  te::Tensor y = te::compute(
      c.out[0].shape, [&](const te::Axes& i) { return (*x)(broadcast_index(i, xs)); }, c.name);
  return lowered({y});
}

Lowered take(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &idx = c.inputs[1];
  const size_t rank = c.in[0].shape.size(), idx_rank = c.in[1].shape.size();
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), rank));
  const int64_t size = c.in[0].shape[axis];
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> at(i.begin() + int64_t(axis), i.begin() + int64_t(axis + idx_rank));
        std::vector<Expr> from(i.begin(), i.begin() + int64_t(axis));
        from.push_back(wrapped_index((*idx)(at), size, i.empty() ? tir::DataType::int32() : i[0]->dtype));
        from.insert(from.end(), i.begin() + int64_t(axis + idx_rank), i.end());
        return (*x)(from);
      },
      c.name);
  Lowered r = lowered({y});
  r.index_checks.push_back({idx, "take", int(axis), {size}});
  return r;
}

Lowered gather_elements(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &idx = c.inputs[1];
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), c.in[0].shape.size()));
  const int64_t size = c.in[0].shape[axis];
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> from(i.begin(), i.end());
        from[axis] = wrapped_index((*idx)(from), size, i[axis]->dtype);
        return (*x)(from);
      },
      c.name);
  Lowered r = lowered({y});
  r.index_checks.push_back({idx, "gather_elements", int(axis), {size}});
  return r;
}

// gather_nd: the first batch_dims axes of the output are data's, then the
// positions of the index tuples, then data's axes after those the tuples
// select along.
Lowered gather_nd(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &idx = c.inputs[1];
  const Shape &xs = c.in[0].shape, &is = c.in[1].shape;
  const size_t b = size_t(c.attrs.get_int("batch_dims")), m = size_t(is.back()), tuple_axes = is.size() - 1;
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> from(i.begin(), i.begin() + std::ptrdiff_t(b));
        std::vector<Expr> tuple(i.begin(), i.begin() + std::ptrdiff_t(tuple_axes));
        for (size_t j = 0; j < m; ++j) {
          std::vector<Expr> at = tuple;
          at.push_back(tir::int_imm(int64_t(j)));
          from.push_back(wrapped_index((*idx)(at), xs[b + j], tir::DataType::int32()));
        }
        from.insert(from.end(), i.begin() + std::ptrdiff_t(tuple_axes), i.end());
        return (*x)(from);
      },
      c.name);
  Lowered r = lowered({y});
  r.index_checks.push_back(
      {idx, "gather_nd", int(b), Shape(xs.begin() + std::ptrdiff_t(b), xs.begin() + std::ptrdiff_t(b + m))});
  return r;
}

// Positions j - i (column minus row of each matrix) compared with k in
// int64: k may be any integer.
Lowered trilu(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const int64_t k = c.attrs.get_int("k");
  const bool upper = c.attrs.get_int("upper") != 0;
  const size_t rank = c.in[0].shape.size();
  const auto i64 = tir::DataType::int64();
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> at(i.begin(), i.end());
        Expr diagonal = tir::sub(tir::cast(i64, at[rank - 1]), tir::cast(i64, at[rank - 2]));
        Expr keep = upper ? tir::binary(tir::BinaryOp::GE, diagonal, tir::int_imm(k, i64))
                          : tir::binary(tir::BinaryOp::LE, diagonal, tir::int_imm(k, i64));
        return tir::select(keep, (*x)(at), constant(0, x->dtype));
      },
      c.name);
  return lowered({y});
}

}  // namespace

void register_shape_lowerings(LoweringTable& t) {
  constexpr OpPattern E = OpPattern::Injective;
  t.add("reshape", E, same_elements, Dtypes::Any);
  t.add("flatten", E, same_elements, Dtypes::Any);
  t.add("squeeze", E, same_elements, Dtypes::Any);
  t.add("expand_dims", E, same_elements, Dtypes::Any);
  t.add("permute_dims", E, permute_dims, Dtypes::Any);
  t.add("concat", E, concat, Dtypes::Any);
  t.add("split", OpPattern::Opaque, split);
  t.add("strided_slice", E, strided_slice, Dtypes::Any);
  t.add("broadcast_to", E, broadcast_to, Dtypes::Any);
  t.add("take", OpPattern::Opaque, take);
  t.add("gather_elements", OpPattern::Opaque, gather_elements);
  t.add("gather_nd", OpPattern::Opaque, gather_nd);
  t.add("trilu", E, trilu);
}

}  // namespace kiln::lower
