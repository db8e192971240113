// Graph passes by name, and the pipeline that runs them.
//
// Every pass is one file in this folder exposing one function
// `Module name(const Module&)`; pipeline.cc lists them, in the order the
// default pipeline runs them, with a one-line description each.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln {

// Removes bindings whose variables are never used (all ops are pure).
Module eliminate_dead_code(const Module& m);
// Evaluates op calls whose arguments are all constants with the reference
// kernels, and field accesses of literal tuples.
Module fold_constants(const Module& m);
// Rewrites float32 einsums as sums, transposes, reshapes and matmuls.
Module decompose_einsum(const Module& m);
// Unrolls nn.rnn, nn.gru and nn.lstm into their steps' products and gates.
Module decompose_recurrent(const Module& m);
// Rewrites power(x, 2) as multiply(x, x) and power(x, 1) as x.
Module simplify_powers(const Module& m);
// Merges bindings of the same op, attributes and arguments.
Module eliminate_common_subexpressions(const Module& m);
// Rewrites activations written in pieces (x * hard_sigmoid(x), x * relu6(x + 3) / 6,
// the erf form of gelu, ...) as their single ops.
Module canonicalize_activations(const Module& m);
// Folds an inference batch_norm into the constant weight of the conv2d, dense
// or matmul feeding it, plus one bias add.
Module fold_batch_norm(const Module& m);
// Folds the constant per-channel multiplies and adds after a conv2d, dense or
// matmul with a constant weight into that weight and one bias add.
Module fold_scale_shift(const Module& m);
// Checks the module (verify_module) and returns it unchanged.
Module verify_pass(const Module& m);

// Options given with a pass name: "fuse-ops-by-pattern{backends=my_npu strict=1}".
using PassOptions = std::map<std::string, std::string>;

struct PassInfo {
  std::string name;         // as given to `kiln opt --passes`
  std::string description;  // one line
  std::function<Module(const Module&)> run;
  // Passes that take options; when set, it runs instead of `run`.
  std::function<Module(const Module&, const PassOptions&)> run_with_options = nullptr;
};

// The tensor type of `e`, or null when it is not a tensor.
inline const TensorDesc* tensor_desc(const Expr& e) {
  return e->type->is_tensor() ? &e->type->tensor : nullptr;
}

// Names for variables a pass adds to a function: `base` when no parameter,
// binding or earlier fresh name has it, else base1, base2, ...
class FreshNames {
 public:
  explicit FreshNames(const FunctionNode& f);
  std::string operator()(const std::string& base);

 private:
  std::set<std::string> taken_;
};

// Each of the host's functions (backend regions and their composites keep
// the ops, types and layouts their codegen expects) replaced by what
// `rewrite` makes of it; null leaves it as it is.
Module rewrite_host_functions(const Module& m, const std::function<Function(const FunctionNode& f)>& rewrite);

// The call `e` is when it calls op `name`; else null.
const CallNode* op_call(const Expr& e, const char* name);

// A function rewritten binding by binding, for rewrites that look through
// variables at what they are bound to: run() keeps each binding that
// rewrite() returns false for, and rewrite() appends the bindings that
// replace one to out_ when it returns true.
class BindingRewriter {
 public:
  explicit BindingRewriter(const FunctionNode& f);
  virtual ~BindingRewriter() = default;
  // The rewritten function; null when no binding changed.
  Function run();

 protected:
  virtual bool rewrite(const Binding& b) = 0;
  // What `e` is bound to, when it is a variable of the function; else `e`.
  Expr value_of(const Expr& e) const;
  // A fresh variable named after `name`, bound to `value` at the end of `to`.
  Var bind(const std::string& name, Expr value, std::vector<Binding>& to);

  const FunctionNode& f_;
  FreshNames fresh_;
  std::vector<Binding> out_;

 private:
  std::map<const ExprNode*, Expr> bound_;
};

// What `rewrite` makes of each binding of the host's functions (backend
// regions and composites are left alone): it appends the bindings that
// replace one to `out` and returns true, or returns false to keep it. A
// function none of whose bindings changed stays the same object.
using BindingRewrite = std::function<bool(const Binding& b, FreshNames& fresh, std::vector<Binding>& out)>;
Module rewrite_bindings(const Module& m, const BindingRewrite& rewrite);

// Splits "name{key=value key=value}" into the name and its options. Throws
// kiln::Error on a malformed option list.
std::string split_pass_options(const std::string& spec, PassOptions& options);
// The one option of pass `pass`: `key`, an integer from `lo` to `hi`;
// `meaning` says what it is (e.g. "the float32 lanes of a vector, e.g.
// block=16"). A missing, malformed or out-of-range value, or any other
// key, is an error naming the pass and the option.
int64_t integer_pass_option(const PassOptions& options, const std::string& pass, const std::string& key,
                            int64_t lo, int64_t hi, const std::string& meaning);
// For passes of several options: refuses any key but `keys`, naming them.
void check_pass_option_keys(const PassOptions& options, const std::string& pass,
                            const std::vector<std::string>& keys);
// Option `key`, which must be given (an integer from `lo` to `hi`, else an
// error as above); other keys are left to check_pass_option_keys.
int64_t required_integer_pass_option(const PassOptions& options, const std::string& pass,
                                     const std::string& key, int64_t lo, int64_t hi,
                                     const std::string& meaning);
// Option `key` when given (an integer from `lo` to `hi`, else an error as
// above), `fallback` when not; other keys are left to check_pass_option_keys.
int64_t integer_pass_option_or(const PassOptions& options, const std::string& pass, const std::string& key,
                               int64_t lo, int64_t hi, const std::string& meaning, int64_t fallback);
// Option dot (0 when not given): the products per int32 lane of the
// integer dot product `what` is laid out for, 4 (byte dot products, VNNI)
// or 2 (int16 pairs, vpmaddwd); anything else is an error as above.
int64_t dot_pass_option(const PassOptions& options, const std::string& pass, const std::string& what);

// Partitioning passes (src/transform/partition.h has their options).
Module fuse_ops_by_pattern_pass(const Module& m, const PassOptions& options);
Module merge_composite_functions_pass(const Module& m, const PassOptions& options);
Module run_codegen_pass(const Module& m, const PassOptions& options);
// Runs the host's float16 ops on float32 values, each result rounded to
// float16 (astype) as the op's own result is, so the float32 passes below
// take them; with excess_precision=1 the ops after each read its float32
// result instead. The model compile pipeline runs it after partitioning
// when the target converts float16 in its vectors (F16C).
Module widen_float16(const Module& m, const PassOptions& options);
// Runs the float32 convs of a quantized model (dequantized uint8 data, a
// weight that is int8 values times a scale per output channel; one group;
// stride 1 and min_columns wide unless their output channels fill blocks
// of block=N) as uint8 x int8 convs, the scales applied to their int32
// sums; and QLinearConv's int32 conv of shifted uint8 data (as imported)
// as the same conv. The model compile pipeline runs it for CPUs with VNNI
// (CpuTarget::int8_dot_lanes).
Module quantize_convs(const Module& m, const PassOptions& options);
// Runs matmuls of uint8 data (its zero point subtracted in int32, as
// MatMulInteger and QLinearMatMul import) by a constant of int8 values as
// uint8 x int8 products minus the zero point times the weight's column
// sums: the same int32 values; and QDQ's float32 matmuls and dense layers
// of dequantized uint8 data by int8 weights times a scale per column so,
// scaled after. The model compile pipeline runs it for CPUs
// with byte dot products (VNNI) or int16 ones (AVX2's vpmaddwd).
Module quantize_matmuls(const Module& m);
// Pools a quantized model's max pools of dequantized integers (through a
// relu) on the integers, dequantizing after: the same values.
Module quantized_max_pools(const Module& m);
// Runs float32 convs and the elementwise ops and global pools between them
// in channel blocks of N (block=N, the float32 lanes of the host's vectors):
// the NCHWc layout. Host functions only; the model compile pipeline runs it
// after partitioning.
Module convert_layout(const Module& m, const PassOptions& options);
// Packs the 2-D constant right operand of each float32 matmul and nn.dense
// into panels of the register tile's columns for vectors of N float32
// lanes (lanes=N), the product becoming nn.matmul_packed; with dot=4 also
// those of uint8 data by int8 weights, in groups of four rows for byte dot
// products (VNNI), with dot=2 as int16 in pairs of rows (vpmaddwd). Host
// functions only; the model compile pipeline runs it after partitioning.
Module pack_matmul_weights(const Module& m, const PassOptions& options);
// Rewrites each float32 3x3 stride-1 nn.conv2d with a constant weight, one
// group, 4 channels or more in and out and two output rows or more as
// nn.conv2d_winograd on its weight transformed by nn.winograd_weight
// (Winograd's F(m, 3) along output rows); likewise an nn.conv2d_blocked of
// blocked data with enough outputs per weight. Host functions only; the
// model compile pipeline runs it after partitioning.
Module winograd_weights(const Module& m);
// The m of the F(m, 3) that winograd-weights runs an nn.conv2d of data x,
// weight w, output y and attributes `attrs` by; 0 when it leaves the conv
// direct.
int64_t winograd_tile_rows(const TensorDesc& x, const TensorDesc& w, const TensorDesc& y, const Attrs& attrs);
// The m of the F(m, 3) that winograd-weights runs a channel-blocked 3x3
// stride-1 conv of `images` images and (rows, columns) outputs by; 0 when
// it leaves the conv direct.
int64_t blocked_winograd_tile_rows(int64_t images, int64_t rows, int64_t columns);

// All graph passes, in pipeline order.
const std::vector<PassInfo>& graph_passes();
const PassInfo* find_graph_pass(const std::string& name);
// The graph optimizations every compiled model gets before partitioning, in
// order (the model compile pipeline, src/driver/, runs them).
const std::vector<std::string>& graph_optimization_passes();

struct PipelineOptions {
  bool print_after_all = false;  // print the module after each pass that changed it
  bool time_passes = false;      // print the time of each pass
  bool verify_each = true;       // run the verifier after each pass
  std::ostream* log = nullptr;   // where printing and timing go (stderr when null)
};

// Runs the named passes in order. Unknown names are an error listing the
// known ones, raised before any pass runs.
Module run_passes(const Module& m, const std::vector<std::string>& names, const PipelineOptions& opts = {});

}  // namespace kiln
