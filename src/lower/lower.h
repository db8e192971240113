// Lowering graph ops to tensor expressions: the step that makes a model's
// host ops compiled code.
//
// Every op the host may run has (at most) one tensor-expression definition,
// written once for every target, in the file of its op family
// (elementwise.cc, nn.cc, reduce.cc, shape.cc, image.cc). A definition takes
// the op's inputs as te::Tensors and returns its outputs as te::Tensors:
//
//   nn.relu(x)  =>  y[i, j] = max(x[i, j], 0.0)
//
// The inputs may be placeholders or the outputs of other ops' definitions,
// which is how a fused kernel is written: the chain of definitions, each
// reading the last, scheduled and lowered as one prim function
// (lower_kernel below). Instances a definition cannot compute (a dtype or an
// attribute value it does not handle) return the reason; the op then runs on
// its reference kernel and the compile summary names it.
//
// The pattern of an op says how it fuses (as in TVM's op patterns):
// injective ops (elementwise, broadcast, reshape, transpose, slice) fuse
// into chains and into the ops around them; a reduction takes injective
// prologues; an anchor (conv, matmul, pooling) takes injective epilogues.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "op/op.h"
#include "schedule/schedule.h"
#include "tir/te/te.h"

namespace kiln {
struct Pad2d;  // op/nn_internal.h
}

namespace kiln::lower {

namespace te = tir::te;

enum class OpPattern : uint8_t {
  Injective,  // each output element reads input elements at index expressions
  Reduction,  // reduces some axes (sum, mean, softmax)
  Anchor,     // conv, matmul, pooling: takes elementwise epilogues
  Opaque,     // fuses with nothing
};
const char* op_pattern_name(OpPattern p);

// What a definition receives: the op's inputs (tensors and their types), its
// normalised attributes and the inferred output types.
struct LowerContext {
  std::string op;
  std::vector<te::Tensor> inputs;
  std::vector<TensorDesc> in;
  std::vector<TensorDesc> out;
  Attrs attrs;
  std::string name;         // the base name of the tensors it makes
  schedule::CpuTarget cpu;  // the CPU the kernel is scheduled for
};

// Indices a gather reads positions from (a kernel parameter), each checked
// to lie in [-size, size) before the kernel computes anything: one outside
// fails the kernel with the reference kernel's message
// (KilnBackendGatherIndexError), nothing read out of bounds. With one size,
// every index selects along `axis`; with several (gather_nd's index tuples
// along the last axis of indices), index j of each tuple selects along axis
// `axis + j` of size sizes[j].
//
// With `message` (one size; a loss's class targets, a region's batch
// indices), each must lie in [0, size) or equal `ignored`, else the kernel
// fails with message[0] INDEX message[1] POSITION message[2] (POSITION
// first with `position_first`): the op's own words, through
// KilnBackendIndexValueError.
struct IndexCheck {
  te::Tensor indices;
  std::string op;  // the op the message names
  int axis = 0;
  std::vector<int64_t> sizes;
  std::vector<std::string> message = {};
  bool position_first = false;
  std::optional<int64_t> ignored = std::nullopt;
};

// A divisor (a kernel parameter) checked to hold no zero before the kernel
// computes anything: a zero fails the kernel with `message`, the
// reference kernel's (KilnBackendCheckFailed).
struct DivisorCheck {
  te::Tensor divisor;
  std::string message;
};

// The outputs, one per op output, or the reason the instance is not lowered.
struct Lowered {
  std::vector<te::Tensor> outputs;
  std::string unsupported;
  // Intermediate elementwise tensors to compute into a buffer rather than
  // inline into their readers (a transposed weight read many times).
  std::vector<te::Tensor> materialized;
  // Reductions to compute in register tiles (conv, matmul).
  std::vector<schedule::AnchorTile> anchors;
  // Copies that transpose square blocks (block and unblock channels).
  std::vector<schedule::TransposeTile> transposes;
  // Reductions of several stages computed row by row (softmax).
  std::vector<schedule::RowTile> rows;
  std::vector<IndexCheck> index_checks;
  std::vector<DivisorCheck> divisor_checks;
};
Lowered unsupported(std::string reason);
Lowered lowered(std::vector<te::Tensor> outputs, std::vector<te::Tensor> materialized = {});
// `y` (rank >= 2) in register tiles over its axes `row` and `col` (< 0: from the end).
// `window`: a materialized padded input of `y`, computed per band of rows
// (AnchorTile::window); `row_stride_bytes`: AnchorTile's.
Lowered tiled(te::Tensor y, int row, int col, std::vector<te::Tensor> materialized = {},
              te::Tensor window = nullptr, int64_t row_stride_bytes = 0);
// A reduction computed on extents padded to whole tiles (`padded`, beyond
// the op's output `out` on its tile axes): named NAME_padded (NAME when
// nothing is padded), and tiled() with the op's output the prefix of its
// rows and columns (`yp` itself when nothing is padded) and the tile at it.
std::string padded_name(const std::string& name, const Shape& padded, const Shape& out);
Lowered tiled_prefix(const te::Tensor& yp, const Shape& out, const std::string& name, int row, int col,
                     std::vector<te::Tensor> materialized = {}, te::Tensor window = nullptr,
                     int64_t row_stride_bytes = 0);

using LowerFn = Lowered (*)(const LowerContext&);

// The element types an op's lowering takes: float32, int8, uint8, int32,
// int64 and bool (Common), or also float64, int16, uint16, uint32 and
// uint64 (Any: ops whose lowering is checked against the reference on
// those, tests/ops/lowering_dtypes_test.cc).
enum class Dtypes { Common, Any };

struct OpLowering {
  std::string op;
  OpPattern pattern;
  LowerFn fn;
  Dtypes dtypes = Dtypes::Common;
};

class LoweringTable {
 public:
  // A second add of one op is an internal error.
  void add(std::string op, OpPattern pattern, LowerFn fn, Dtypes dtypes = Dtypes::Common);
  const OpLowering* find(std::string_view op) const;
  const std::vector<OpLowering>& all() const { return entries_; }

 private:
  std::vector<OpLowering> entries_;
};

// Every definition, registered by the calls below in registry.cc.
const LoweringTable& lowerings();
void register_elementwise_lowerings(LoweringTable& t);  // elementwise.cc: unary, binary, clip, astype, logic
void register_nn_lowerings(LoweringTable& t);        // nn.cc: conv2d, dense, matmul, pools, batch_norm, pad
void register_reduce_lowerings(LoweringTable& t);    // reduce.cc: sum, mean, max, min, softmax, argmax
void register_shape_lowerings(LoweringTable& t);     // shape.cc: reshape, permute_dims, concat, slices, ...
void register_image_lowerings(LoweringTable& t);     // image.cc: image.resize2d
void register_layout_lowerings(LoweringTable& t);    // layout.cc: channel-blocked layouts and conv2d_blocked
void register_winograd_lowerings(LoweringTable& t);  // conv_winograd.cc: nn.conv2d_winograd
void register_quant_lowerings(LoweringTable& t);     // quant.cc: quantize, dequantize
void register_scan_lowerings(LoweringTable& t);      // scan.cc: cumsum
void register_scatter_lowerings(LoweringTable& t);   // scatter.cc: scatter_elements, scatter_nd
void register_sort_lowerings(LoweringTable& t);      // sort.cc: topk
void register_loss_lowerings(LoweringTable& t);      // loss.cc: nn.nll_loss
void register_grid_sample_lowerings(LoweringTable& t);  // grid_sample.cc: image.grid_sample
void register_roi_align_lowerings(LoweringTable& t);    // roi_align.cc: image.roi_align
void register_window3d_lowerings(LoweringTable& t);  // window3d.cc: nn.conv3d, nn.max_pool3d, nn.avg_pool3d

// The pattern of `op`; Opaque when it has no definition.
OpPattern pattern_of(std::string_view op);
// The pattern of `op` on inputs `in`: an integer divide (it checks its
// divisor, which must be a kernel input) and an integer power (a loop of
// statements) are Opaque, else pattern_of(op).
OpPattern pattern_of(std::string_view op, const std::vector<TensorDesc>& in);

// One op of a kernel: the op, its normalised attributes and types, and
// where each input comes from: a kernel parameter (>= 0) or the output
// `output` of an earlier op of the kernel (param < 0, producer >= 0).
struct KernelOp {
  std::string op;
  Attrs attrs;
  std::vector<TensorDesc> in;
  std::vector<TensorDesc> out;
  struct Source {
    int param = -1;
    int producer = -1;
    int output = 0;
  };
  std::vector<Source> sources;
};

// A kernel: parameters (the inputs), ops in order, and its outputs (op,
// output index). The prim function takes the inputs, then the outputs.
struct KernelSpec {
  std::string name;
  std::vector<TensorDesc> params;
  std::vector<KernelOp> ops;
  std::vector<std::pair<int, int>> outputs;
};

// A kernel `name` of one op: its inputs are the kernel's parameters, in
// order, and its outputs the kernel's. `attrs` as the op takes them
// (normalized).
KernelSpec single_op_kernel(const std::string& name, const std::string& op, const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out, const Attrs& attrs);

// The scheduled and lowered prim function of `spec`, or the reason one of
// its ops cannot be lowered (`why`). Intermediate injective results are
// computed inline in their readers; other intermediates get a buffer.
// Scheduled for `cpu`.
std::optional<tir::PrimFunc> lower_kernel(const KernelSpec& spec, std::string* why = nullptr,
                                          const schedule::CpuTarget& cpu = schedule::host_cpu_target());

// Whether one op instance can be lowered; the reason when it cannot.
// Scheduled for `cpu` (a DSP's scratchpad tiles can be what does not fit).
std::optional<std::string> why_not_lowered(const std::string& op, const std::vector<TensorDesc>& in,
                                           const std::vector<TensorDesc>& out, const Attrs& attrs,
                                           const schedule::CpuTarget& cpu = schedule::host_cpu_target());

// ---------------------------------------------------------------- helpers for definitions

// The tensor-IR type of a tensor dtype; float16 is not lowered (nullopt).
std::optional<tir::DataType> lowered_dtype(DType t);
// A constant of type t.
tir::Expr constant(double v, tir::DataType t);
// The indices of `in` (of shape `in_shape`) that numpy broadcasting reads
// for output element `axes` (of rank >= in's).
std::vector<tir::Expr> broadcast_index(const te::Axes& axes, const Shape& in_shape);
// The same for output position `at` (an extern statement's loop variables).
std::vector<tir::Expr> broadcast_index(const std::vector<tir::Expr>& at, const Shape& in_shape);
// An index clamped to [0, extent - 1], for loads whose value a select may
// discard (padding): loads never leave the buffer.
tir::Expr clamp_index(tir::Expr i, int64_t extent);
// 0 <= i < extent: whether a padded read is inside (its value is not padding).
tir::Expr index_within(const tir::Expr& i, int64_t extent);
// A pixel position held in a float (an integer value) as an int32 index,
// for loads a select or a zero weight may discard: NaN and positions
// outside [0, extent - 1] become 0 before the conversion, so the load
// stays in the buffer and the conversion is defined.
tir::Expr position_index(const tir::Expr& v, int64_t extent);
// Keys' cubic convolution weights (parameter a) of the 4 taps at distances
// 1 + t, t, 1 - t and 2 - t from a position t past the second's, in the
// reference kernels' order of operations (resize's cubic, grid_sample's
// bicubic).
std::vector<tir::Expr> cubic_weights(const tir::Expr& t, double a);
// x zero-padded on its axes 2 and 3 (rows and columns of NCHW, and of
// channel blocks (N, C / c, H, W, c)); x itself when `p` pads nothing.
te::Tensor pad_hw(const te::Tensor& x, const Pad2d& p, const std::string& name);
// x converted to `type` and zero-padded so, always a copy (uint8 data as
// int16 for vpmaddwd's pairs).
te::Tensor widened_pad_hw(const te::Tensor& x, const Pad2d& p, tir::DataType type, const std::string& name);
// Row-major linear index of `axes` in `shape`, and its inverse.
tir::Expr linear_index(const std::vector<tir::Expr>& axes, const Shape& shape);
std::vector<tir::Expr> unravel(tir::Expr linear, const Shape& shape);
// Normalises a possibly negative axis of a rank-`rank` tensor.
int64_t norm_axis(int64_t axis, size_t rank);
// `position` (an index of int32 or int64 dtype) plus `size` when negative,
// as an index of `dtype`.
tir::Expr wrapped_index(const tir::Expr& position, int64_t size, tir::DataType dtype);
// For extern statements (te::extern_compute): loops named PREFIX0,
// PREFIX1, ... over `extents` (outermost first) around body(their
// variables); the innermost loop of kind `innermost` (a rank-0 nest is
// body({}) alone).
tir::Stmt loop_nest(const Shape& extents, const std::string& prefix,
                    const std::function<tir::Stmt(const std::vector<tir::Expr>&)>& body,
                    tir::ForKind innermost = tir::ForKind::Serial);

}  // namespace kiln::lower
