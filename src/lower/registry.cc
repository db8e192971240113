// The table of op definitions, the helpers definitions share, and
// lower_kernel: a chain of definitions scheduled into one prim function.
#include <algorithm>
#include <set>

#include "lower/lower.h"
#include "op/nn_internal.h"
#include "schedule/schedule.h"
#include "tir/transform/passes.h"

namespace kiln::lower {

const char* op_pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::Injective:
      return "injective";
    case OpPattern::Reduction:
      return "reduction";
    case OpPattern::Anchor:
      return "anchor";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

Lowered unsupported(std::string reason) { return Lowered{{}, std::move(reason), {}, {}, {}, {}, {}, {}}; }

Lowered lowered(std::vector<te::Tensor> outputs, std::vector<te::Tensor> materialized) {
  return Lowered{std::move(outputs), "", std::move(materialized), {}, {}, {}, {}, {}};
}

Lowered tiled(te::Tensor y, int row, int col, std::vector<te::Tensor> materialized, te::Tensor window,
              int64_t row_stride_bytes) {
  int rank = int(y->shape.size());
  Lowered r = lowered({y}, std::move(materialized));
  if (rank >= 2)
    r.anchors.push_back(
        {y, row < 0 ? row + rank : row, col < 0 ? col + rank : col, nullptr, window, row_stride_bytes});
  return r;
}

std::string padded_name(const std::string& name, const Shape& padded, const Shape& out) {
  return padded == out ? name : name + "_padded";
}

Lowered tiled_prefix(const te::Tensor& yp, const Shape& out, const std::string& name, int row, int col,
                     std::vector<te::Tensor> materialized, te::Tensor window, int64_t row_stride_bytes) {
  te::Tensor y = yp;
  if (yp->shape != out)
    y = te::compute(
        out, [&](const te::Axes& i) { return (*yp)(i); }, name);
  Lowered r = tiled(y, row, col, std::move(materialized), std::move(window), row_stride_bytes);
  if (!r.anchors.empty()) r.anchors.back().tensor = yp;
  return r;
}

void LoweringTable::add(std::string op, OpPattern pattern, LowerFn fn, Dtypes dtypes) {
  KILN_ASSERT(find(op) == nullptr, "op " + op + " has two lowerings");
  KILN_ASSERT(find_op(op) != nullptr, "lowering of " + op + ", which is not in the op registry");
  entries_.push_back({std::move(op), pattern, fn, dtypes});
}

const OpLowering* LoweringTable::find(std::string_view op) const {
  for (const auto& e : entries_)
    if (e.op == op) return &e;
  return nullptr;
}

const LoweringTable& lowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_elementwise_lowerings(t);
    register_nn_lowerings(t);
    register_reduce_lowerings(t);
    register_shape_lowerings(t);
    register_image_lowerings(t);
    register_layout_lowerings(t);
    register_winograd_lowerings(t);
    register_quant_lowerings(t);
    register_scan_lowerings(t);
    register_scatter_lowerings(t);
    register_sort_lowerings(t);
    register_loss_lowerings(t);
    register_grid_sample_lowerings(t);
    register_roi_align_lowerings(t);
    register_window3d_lowerings(t);
    return t;
  }();
  return table;
}

OpPattern pattern_of(std::string_view op) {
  const OpLowering* l = lowerings().find(op);
  return l ? l->pattern : OpPattern::Opaque;
}

OpPattern pattern_of(std::string_view op, const std::vector<TensorDesc>& in) {
  // Integer division checks its divisor (a kernel input); integer power is
  // a loop of statements (an extern): both kernels of their own.
  if ((op == "divide" || op == "power") && !in.empty() && !is_float(in[0].dtype)) return OpPattern::Opaque;
  return pattern_of(op);
}

// ---------------------------------------------------------------- helpers

std::optional<tir::DataType> lowered_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return tir::DataType::float32();
    // Kernel parameters only: ops compute on float16 in float32 (lower_kernel).
    case DType::Float16:
      return tir::DataType::float_(16);
    case DType::Int8:
      return tir::DataType::int_(8);
    case DType::UInt8:
      return tir::DataType::uint(8);
    case DType::Int32:
      return tir::DataType::int32();
    case DType::Int64:
      return tir::DataType::int64();
    case DType::Bool:
      return tir::DataType::bool_();
    // Only for ops registered with Dtypes::Any.
    case DType::Float64:
      return tir::DataType::float_(64);
    case DType::Int16:
      return tir::DataType::int_(16);
    case DType::UInt16:
      return tir::DataType::uint(16);
    case DType::UInt32:
      return tir::DataType::uint(32);
    case DType::UInt64:
      return tir::DataType::uint(64);
    // Not lowered: bfloat16 has no tir type.
    case DType::BFloat16:
      return std::nullopt;
  }
  return std::nullopt;
}

tir::Expr constant(double v, tir::DataType t) {
  if (t.is_float()) return tir::float_imm(v, t);
  if (t.is_bool()) return tir::cast(t, tir::int_imm(v != 0 ? 1 : 0));
  return tir::int_imm(static_cast<int64_t>(v), t);
}

std::vector<tir::Expr> broadcast_index(const te::Axes& axes, const Shape& in_shape) {
  return broadcast_index(std::vector<tir::Expr>(axes.begin(), axes.end()), in_shape);
}

std::vector<tir::Expr> broadcast_index(const std::vector<tir::Expr>& at, const Shape& in_shape) {
  std::vector<tir::Expr> idx;
  size_t lead = at.size() - in_shape.size();
  for (size_t k = 0; k < in_shape.size(); ++k)
    idx.push_back(in_shape[k] == 1 ? tir::int_imm(0) : at[lead + k]);
  return idx;
}

tir::Expr clamp_index(tir::Expr i, int64_t extent) {
  return tir::min(tir::max(std::move(i), tir::int_imm(0)), tir::int_imm(extent - 1));
}

tir::Expr position_index(const tir::Expr& v, int64_t extent) {
  const tir::DataType t = v->dtype;
  tir::Expr inside = tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::GE, v, tir::float_imm(0, t)),
                                 tir::binary(tir::BinaryOp::LE, v, tir::float_imm(double(extent - 1), t)));
  return tir::cast(tir::DataType::int32(), tir::select(inside, v, tir::float_imm(0, t)));
}

std::vector<tir::Expr> cubic_weights(const tir::Expr& t, double a) {
  auto c = [&](double v) { return tir::float_imm(v, t->dtype); };
  auto near = [&](const tir::Expr& x) {  // |x| <= 1
    return tir::add(tir::mul(tir::mul(tir::sub(tir::mul(c(a + 2), x), c(a + 3)), x), x), c(1));
  };
  auto far = [&](const tir::Expr& x) {  // 1 < |x| < 2
    tir::Expr inner = tir::add(tir::mul(tir::sub(tir::mul(c(a), x), c(5 * a)), x), c(8 * a));
    return tir::sub(tir::mul(inner, x), c(4 * a));
  };
  return {far(tir::add(c(1), t)), near(t), near(tir::sub(c(1), t)), far(tir::sub(c(2), t))};
}

tir::Expr index_within(const tir::Expr& i, int64_t extent) {
  return tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::GE, i, tir::int_imm(0)),
                     tir::lt(i, tir::int_imm(extent)));
}

te::Tensor pad_hw(const te::Tensor& x, const Pad2d& p, const std::string& name) {
  if (p.top == 0 && p.left == 0 && p.bottom == 0 && p.right == 0) return x;
  return widened_pad_hw(x, p, x->dtype, name);
}

te::Tensor widened_pad_hw(const te::Tensor& x, const Pad2d& p, tir::DataType type, const std::string& name) {
  const Shape& s = x->shape;
  const int64_t H = s[2], W = s[3];
  Shape padded = s;
  padded[2] += p.top + p.bottom;
  padded[3] += p.left + p.right;
  return te::compute(
      padded,
      [&](const te::Axes& i) {
        tir::Expr h = tir::sub(i[2], tir::int_imm(p.top)), w = tir::sub(i[3], tir::int_imm(p.left));
        std::vector<tir::Expr> idx(i.begin(), i.end());
        idx[2] = clamp_index(h, H);
        idx[3] = clamp_index(w, W);
        tir::Expr v = (*x)(idx);
        if (type != x->dtype) v = tir::cast(type, v);
        return tir::select(tir::binary(tir::BinaryOp::And, index_within(h, H), index_within(w, W)), v,
                           constant(0, type));
      },
      type != x->dtype ? name + "_" + tir::dtype_str(type) : name + "_pad");
}

tir::Expr linear_index(const std::vector<tir::Expr>& axes, const Shape& shape) {
  tir::Expr lin = tir::int_imm(0);
  for (size_t k = 0; k < shape.size(); ++k) lin = tir::add(tir::mul(lin, tir::int_imm(shape[k])), axes[k]);
  return lin;
}

tir::Expr wrapped_index(const tir::Expr& position, int64_t size, tir::DataType dtype) {
  tir::Expr wrapped = tir::select(tir::lt(position, constant(0, position->dtype)),
                                  tir::add(position, constant(double(size), position->dtype)), position);
  return tir::cast(dtype, wrapped);
}

tir::Stmt loop_nest(const Shape& extents, const std::string& prefix,
                    const std::function<tir::Stmt(const std::vector<tir::Expr>&)>& body,
                    tir::ForKind innermost) {
  std::vector<tir::Var> vars;
  std::vector<tir::Expr> at;
  for (size_t d = 0; d < extents.size(); ++d) {
    vars.push_back(tir::make_var(prefix + std::to_string(d)));
    at.push_back(vars.back());
  }
  tir::Stmt loop = body(at);
  for (size_t d = extents.size(); d-- > 0;)
    loop = tir::for_loop(vars[d], tir::int_imm(0), tir::int_imm(extents[d]),
                         d + 1 == extents.size() ? innermost : tir::ForKind::Serial, loop);
  return loop;
}

std::vector<tir::Expr> unravel(tir::Expr linear, const Shape& shape) {
  std::vector<tir::Expr> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = k == 0 ? linear : tir::mod(linear, tir::int_imm(shape[k]));
    linear = tir::div(linear, tir::int_imm(shape[k]));
  }
  return idx;
}

int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// ---------------------------------------------------------------- kernels

namespace {

bool is_float_or_int_dtypes(const std::vector<TensorDesc>& descs, std::string* why) {
  for (const auto& d : descs) {
    if (!lowered_dtype(d.dtype)) {
      *why = std::string(dtype_name(d.dtype)) + " tensors are not lowered yet";
      return false;
    }
    // Tensor expressions have positive extents; an empty tensor has nothing
    // to compute and its reference kernel handles it.
    for (int64_t e : d.shape)
      if (e == 0) {
        *why = "empty tensors (a dimension of 0) are left to the reference kernel";
        return false;
      }
  }
  return true;
}

// Whether `descs` are all of the types every lowering takes (Dtypes::Common).
bool common_dtypes(const std::vector<TensorDesc>& descs, std::string* why) {
  for (const auto& d : descs) switch (d.dtype) {
      case DType::Float32:
      case DType::Int8:
      case DType::UInt8:
      case DType::Int32:
      case DType::Int64:
      case DType::Bool:
        break;
      default:
        *why = std::string(dtype_name(d.dtype)) + " tensors are not lowered yet for this op";
        return false;
    }
  return true;
}

// `descs` with float16 taken as float32, the type ops compute float16 in.
std::vector<TensorDesc> computed_as_float32(std::vector<TensorDesc> descs) {
  for (TensorDesc& d : descs)
    if (d.dtype == DType::Float16) d.dtype = DType::Float32;
  return descs;
}

// `t` converted to `to` element by element (inlined where it is read).
te::Tensor converted(const te::Tensor& t, tir::DataType to, const std::string& name) {
  return te::compute(
      t->shape, [&](const te::Axes& i) { return tir::cast(to, (*t)(i)); }, name);
}

// A copy of `t`: a kernel output must be a tensor the kernel computes.
te::Tensor copy_of(const te::Tensor& t, const std::string& name) {
  return te::compute(
      t->shape, [&](const te::Axes& i) { return (*t)(i); }, name);
}

// The check of the element at `at` of `indices` (the buffer of
// check.indices) against [-size, size): a failure names the op, the index,
// its row-major position in the indices, the axis and its size. With
// check.message, against [0, size) but check.ignored, in the op's words.
tir::Stmt index_check(const IndexCheck& check, const tir::Buffer& indices, const std::vector<tir::Expr>& at,
                      int axis, int64_t size) {
  const auto i64 = tir::DataType::int64();
  tir::Var index = tir::make_var("index", i64);
  const bool own = !check.message.empty();
  const int64_t least = own ? 0 : -size;
  tir::Expr outside = tir::binary(tir::BinaryOp::Or, tir::lt(index, tir::int_imm(least, i64)),
                                  tir::binary(tir::BinaryOp::GE, index, tir::int_imm(size, i64)));
  if (check.ignored)
    outside = tir::binary(tir::BinaryOp::And, outside,
                          tir::binary(tir::BinaryOp::NE, index, tir::int_imm(*check.ignored, i64)));
  tir::Expr position = tir::cast(i64, linear_index(at, check.indices->shape));
  tir::Expr report;
  if (own) {
    tir::Expr a = check.position_first ? position : tir::Expr(index),
              b = check.position_first ? tir::Expr(index) : position;
    report = tir::call_extern(tir::DataType::int32(), "KilnBackendIndexValueError",
                              {tir::string_imm(check.message.at(0)), a, tir::string_imm(check.message.at(1)),
                               b, tir::string_imm(check.message.at(2))});
  } else {
    report = tir::call_extern(
        tir::DataType::int32(), "KilnBackendGatherIndexError",
        {tir::string_imm(check.op), index, position, tir::int_imm(axis), tir::int_imm(size, i64)});
  }
  return tir::let_stmt(
      index, tir::cast(i64, tir::load(indices, at)),
      tir::if_then_else(outside, tir::seq({tir::evaluate(report), tir::return_stmt(tir::int_imm(-1))})));
}

// The kernel's input checks: the gathers' indices and the divisors, each
// a kernel parameter (its position in the parameters with it).
struct InputChecks {
  std::vector<std::pair<IndexCheck, size_t>> indices;
  std::vector<std::pair<DivisorCheck, size_t>> divisors;
  bool empty() const { return indices.empty() && divisors.empty(); }
};

// `f` with `checks` first: a loop over each one's tensor that fails the
// kernel at the first index outside its range (in the order of the
// indices) or the first zero divisor.
tir::PrimFunc with_input_checks(const tir::PrimFunc& f, const InputChecks& checks) {
  if (checks.empty()) return f;
  std::vector<tir::Stmt> body;
  for (const auto& [check, param] : checks.divisors) {
    const tir::Buffer& divisor = f->params.at(param).buffer;
    const Shape& shape = check.divisor->shape;
    body.push_back(loop_nest(shape, "p", [&](const std::vector<tir::Expr>& at) {
      tir::Expr d = tir::load(divisor, at);
      tir::Expr report = tir::call_extern(tir::DataType::int32(), "KilnBackendCheckFailed",
                                          {tir::string_imm(check.message)});
      return tir::if_then_else(tir::eq(d, constant(0, d->dtype)),
                               tir::seq({tir::evaluate(report), tir::return_stmt(tir::int_imm(-1))}));
    }));
  }
  for (const auto& [check, param] : checks.indices) {
    const tir::Buffer& indices = f->params.at(param).buffer;
    const Shape& shape = check.indices->shape;
    const bool tuples = check.sizes.size() > 1;
    // Loops over every axis, or all but the last (the tuples' positions).
    const size_t looped = tuples ? shape.size() - 1 : shape.size();
    body.push_back(loop_nest(Shape(shape.begin(), shape.begin() + std::ptrdiff_t(looped)), "p",
                             [&](const std::vector<tir::Expr>& at) {
                               if (!tuples)
                                 return index_check(check, indices, at, check.axis, check.sizes.at(0));
                               std::vector<tir::Stmt> checked;
                               for (size_t j = 0; j < check.sizes.size(); ++j) {
                                 std::vector<tir::Expr> element = at;
                                 element.push_back(tir::int_imm(int64_t(j)));
                                 checked.push_back(index_check(check, indices, element, check.axis + int(j),
                                                               check.sizes[j]));
                               }
                               return tir::seq(std::move(checked));
                             }));
  }
  if (f->body->kind == tir::StmtKind::Seq) {
    const auto& stmts = static_cast<const tir::SeqNode&>(*f->body).stmts;
    body.insert(body.end(), stmts.begin(), stmts.end());
  } else {
    body.push_back(f->body);
  }
  tir::PrimFunc checked = tir::make_prim_func(f->name, f->params, tir::seq(std::move(body)));
  tir::verify_prim_func(*checked);
  return checked;
}

std::string tensor_name(const std::string& op, int index) {
  std::string n = op.substr(op.find('.') == std::string::npos ? 0 : op.find('.') + 1);
  return n + "_" + std::to_string(index);
}

}  // namespace

// A kernel whose every output is empty (a dimension of 0) computes nothing:
// its parameters as declared and a body that returns. Null when an output
// has elements or a type has no tir type.
std::optional<tir::PrimFunc> empty_kernel(const KernelSpec& spec) {
  std::vector<TensorDesc> descs = spec.params;
  for (const auto& [op, output] : spec.outputs) {
    const TensorDesc& d = spec.ops.at(size_t(op)).out.at(size_t(output));
    if (shape_numel(d.shape) != 0) return std::nullopt;
    descs.push_back(d);
  }
  std::vector<tir::PrimParam> params;
  for (size_t i = 0; i < descs.size(); ++i) {
    auto t = lowered_dtype(descs[i].dtype);
    if (!t) return std::nullopt;
    std::vector<tir::Expr> shape;
    for (int64_t e : descs[i].shape) shape.push_back(tir::int_imm(e));
    tir::Buffer b = tir::make_buffer((i < spec.params.size() ? "in" : "out") + std::to_string(i), *t, shape);
    params.push_back({b->data, b});
  }
  return tir::make_prim_func(spec.name, params, tir::return_stmt(tir::int_imm(0)));
}

std::optional<tir::PrimFunc> lower_kernel(const KernelSpec& spec, std::string* why,
                                          const schedule::CpuTarget& cpu) {
  if (!spec.outputs.empty())
    if (auto f = empty_kernel(spec)) return f;
  std::string reason;
  std::vector<te::Tensor> params;
  if (!is_float_or_int_dtypes(spec.params, &reason)) {
    if (why) *why = reason;
    return std::nullopt;
  }
  for (size_t i = 0; i < spec.params.size(); ++i) {
    auto t = lowered_dtype(spec.params[i].dtype);
    if (!t) {
      if (why) *why = std::string(dtype_name(spec.params[i].dtype)) + " tensors are not lowered yet";
      return std::nullopt;
    }
    params.push_back(te::placeholder(spec.params[i].shape, *t, "in" + std::to_string(i)));
  }
  std::vector<std::vector<te::Tensor>> results;
  std::set<const te::TensorNode*> materialized;
  std::vector<schedule::AnchorTile> anchors;
  std::vector<schedule::TransposeTile> transposes;
  std::vector<schedule::RowTile> rows;
  InputChecks checks;
  for (size_t k = 0; k < spec.ops.size(); ++k) {
    const KernelOp& op = spec.ops[k];
    const OpLowering* l = lowerings().find(op.op);
    if (!l) {
      if (why) *why = "no lowering";
      return std::nullopt;
    }
    // float16 values are float32 to the lowerings: converted as they are
    // read and rounded back as they are stored, as the reference kernels
    // compute them (each op's result rounded to float16).
    const std::vector<TensorDesc> in32 = computed_as_float32(op.in), out32 = computed_as_float32(op.out);
    if (!is_float_or_int_dtypes(op.in, &reason) || !is_float_or_int_dtypes(op.out, &reason) ||
        (l->dtypes == Dtypes::Common && (!common_dtypes(in32, &reason) || !common_dtypes(out32, &reason)))) {
      if (why) *why = reason;
      return std::nullopt;
    }
    if ((in32 != op.in || out32 != op.out) && !cpu.float16_conversions) {
      if (why) *why = "float16 tensors need a target with float16 conversions (x86's F16C)";
      return std::nullopt;
    }
    LowerContext ctx{op.op, {}, in32, out32, op.attrs, tensor_name(op.op, int(k)), cpu};
    for (size_t j = 0; j < op.sources.size(); ++j) {
      const KernelOp::Source& s = op.sources[j];
      te::Tensor x =
          s.param >= 0 ? params.at(size_t(s.param)) : results.at(size_t(s.producer)).at(size_t(s.output));
      if (op.in.at(j).dtype == DType::Float16)
        x = converted(x, tir::DataType::float32(), ctx.name + "_in" + std::to_string(j));
      ctx.inputs.push_back(x);
    }
    Lowered r = l->fn(ctx);
    if (!r.unsupported.empty()) {
      if (why) *why = r.unsupported;
      return std::nullopt;
    }
    KILN_ASSERT(r.outputs.size() == op.out.size(),
                "lowering of " + op.op + " made the wrong number of outputs");
    for (size_t o = 0; o < r.outputs.size(); ++o)
      KILN_ASSERT(r.outputs[o]->shape == op.out[o].shape,
                  "lowering of " + op.op + " made an output of the wrong shape");
    for (const auto& m : r.materialized) materialized.insert(m.get());
    // An extern statement reads its inputs from buffers.
    for (const auto& o : r.outputs)
      if (o->is_extern())
        for (const te::Tensor& x : o->inputs) materialized.insert(x.get());
    anchors.insert(anchors.end(), r.anchors.begin(), r.anchors.end());
    transposes.insert(transposes.end(), r.transposes.begin(), r.transposes.end());
    rows.insert(rows.end(), r.rows.begin(), r.rows.end());
    // Each check reads a kernel input: the check with that input's position.
    auto place = [&](const auto& list, auto tensor, const std::string& what, auto& out) {
      for (const auto& check : list) {
        auto p = std::find(params.begin(), params.end(), check.*tensor);
        if (p == params.end()) {
          if (why) *why = op.op + "'s " + what + " computed in the same kernel (checks read kernel inputs)";
          return false;
        }
        out.push_back({check, size_t(p - params.begin())});
      }
      return true;
    };
    if (!place(r.index_checks, &IndexCheck::indices, "indices are", checks.indices) ||
        !place(r.divisor_checks, &DivisorCheck::divisor, "divisor is", checks.divisors))
      return std::nullopt;
    // Rounded back where it is stored (an extern's output too, after its
    // inputs were marked to be buffers above).
    for (size_t o = 0; o < r.outputs.size(); ++o)
      if (op.out[o].dtype == DType::Float16)
        r.outputs[o] =
            converted(r.outputs[o], tir::DataType::float_(16), ctx.name + "_out" + std::to_string(o));
    results.push_back(std::move(r.outputs));
  }
  std::vector<te::Tensor> outputs;
  std::set<const te::TensorNode*> seen;
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    te::Tensor t = results.at(size_t(spec.outputs[i].first)).at(size_t(spec.outputs[i].second));
    if (t->is_placeholder() || seen.count(t.get())) t = copy_of(t, "out" + std::to_string(i));
    seen.insert(t.get());
    outputs.push_back(t);
  }
  auto make_schedule = [&] {
    te::Schedule s(outputs);
    for (const auto& st : s.stages()) {
      const te::TensorNode& t = *st->tensor();
      if (!t.is_placeholder() && !t.is_extern() && !st->is_output() &&
          t.reduction.kind == te::ReduceKind::None && !materialized.count(&t))
        st->compute_inline();
    }
    return s;
  };
  std::vector<te::Tensor> args = params;
  args.insert(args.end(), outputs.begin(), outputs.end());
  if (!cpu.scratchpad_bytes) {
    te::Schedule s = make_schedule();
    schedule::apply_default_schedule(s, anchors, transposes, rows, cpu);
    return with_input_checks(te::lower(s, args, spec.name), checks);
  }
  // A scratchpad target: the largest tiles whose working set fits half the
  // scratchpad (the other half is left for double buffering and other kernels' tiles).
  uint64_t smallest = 0;
  for (int level = 0;; ++level) {
    te::Schedule s = make_schedule();
    tir::PrimFunc f;
    try {
      if (!schedule::apply_scratchpad_schedule(s, cpu, level)) break;
      f = te::lower(s, args, spec.name);
    } catch (const Error& e) {
      if (why) *why = "its tiles could not be scheduled into VTCM: " + e.message();
      return std::nullopt;
    }
    smallest = tir::scratchpad_peak_bytes(*f);
    if (smallest <= cpu.scratchpad_bytes / 2) return with_input_checks(f, checks);
  }
  if (why)
    *why = "its working set cannot be tiled into VTCM: the smallest tiles need " + std::to_string(smallest) +
           " bytes, more than half of the target's " + std::to_string(cpu.scratchpad_bytes);
  return std::nullopt;
}

KernelSpec single_op_kernel(const std::string& name, const std::string& op, const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out, const Attrs& attrs) {
  KernelSpec spec;
  spec.name = name;
  spec.params = in;
  KernelOp k{op, attrs, in, out, {}};
  for (size_t i = 0; i < in.size(); ++i) k.sources.push_back({int(i), -1, 0});
  spec.ops.push_back(k);
  for (size_t o = 0; o < out.size(); ++o) spec.outputs.push_back({0, int(o)});
  return spec;
}

std::optional<std::string> why_not_lowered(const std::string& op, const std::vector<TensorDesc>& in,
                                           const std::vector<TensorDesc>& out, const Attrs& attrs,
                                           const schedule::CpuTarget& cpu) {
  std::string why;
  if (lower_kernel(single_op_kernel("probe", op, in, out, attrs), &why, cpu)) return std::nullopt;
  return why;
}

}  // namespace kiln::lower
