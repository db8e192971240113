// The graph IR: types, expressions, functions and modules.
//
// Nodes are plain immutable structs held by shared_ptr<const ...>; a pass
// builds new nodes rather than editing old ones. A function body is a list of
// bindings in A-normal form:
//
//   def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> Tensor[(2, 8), float32] {
//     %y = matmul(%x, %w)
//     %z = nn.relu(%y)
//     return %z
//   }
//
// Every expression carries its type, computed when the node is made (the
// make_* functions run the op's inference and throw kiln::Error on a type
// error), so a Module that exists is well typed. Variables are identified by
// their node, not their name; structural equality maps variables by position.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"
#include "op/op.h"

namespace kiln {

// Tensor-level functions (src/tir/tir.h); kept out of this header.
namespace tir {
struct PrimFuncNode;
}

// ---------------------------------------------------------------- types

// A dimension < 0 is symbolic (unknown until bound); the IR keeps its name in
// TypeNode::dim_names. Ops require static shapes today.
inline constexpr int64_t kSymbolicDim = -1;

struct TypeNode;
using Type = std::shared_ptr<const TypeNode>;

struct TypeNode {
  enum class Kind : uint8_t { Tensor, Tuple };
  Kind kind = Kind::Tensor;
  TensorDesc tensor;                   // Kind::Tensor
  std::vector<std::string> dim_names;  // Kind::Tensor: names of symbolic dims, else empty
  std::vector<Type> fields;            // Kind::Tuple

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_tuple() const { return kind == Kind::Tuple; }
};

Type tensor_type(Shape shape, DType dtype);
Type tensor_type(const TensorDesc& desc);
Type tuple_type(std::vector<Type> fields);
bool type_equal(const Type& a, const Type& b);
std::string type_str(const Type& t);  // as the text format writes it
// The tensor types of a value, tuples flattened in order.
std::vector<TensorDesc> flatten_type(const Type& t);

// ---------------------------------------------------------------- expressions

// The one list of expression kinds; visitors are generated from it.
#define KILN_EXPR_KINDS(X) \
  X(Var)                   \
  X(Constant)              \
  X(Call)                  \
  X(Tuple)                 \
  X(TupleGetItem)

enum class ExprKind : uint8_t {
#define KILN_ENUM_ENTRY(name) name,
  KILN_EXPR_KINDS(KILN_ENUM_ENTRY)
#undef KILN_ENUM_ENTRY
};
const char* expr_kind_name(ExprKind k);

struct ExprNode {
  ExprKind kind;
  Type type;
  explicit ExprNode(ExprKind k, Type t) : kind(k), type(std::move(t)) {}
  virtual ~ExprNode() = default;
};
using Expr = std::shared_ptr<const ExprNode>;

// A function parameter or the variable a binding defines.
struct VarNode : ExprNode {
  std::string name;  // without the '%'
  VarNode(std::string n, Type t) : ExprNode(ExprKind::Var, std::move(t)), name(std::move(n)) {}
};
using Var = std::shared_ptr<const VarNode>;

struct ConstantNode : ExprNode {
  Tensor value;
  // Key of this constant in the module's side file; empty for inline constants.
  std::string name;
  ConstantNode(Tensor v, std::string n);
};

// A call to an op (op != nullptr) or to a function of the module (callee).
struct CallNode : ExprNode {
  const OpDef* op = nullptr;
  std::string callee;  // function name without '@', when op == nullptr
  std::vector<Expr> args;
  Attrs attrs;  // op attributes, normalised (defaults filled in)
  CallNode(Type t) : ExprNode(ExprKind::Call, std::move(t)) {}
  bool is_op_call() const { return op != nullptr; }
};

struct TupleNode : ExprNode {
  std::vector<Expr> fields;
  TupleNode(Type t, std::vector<Expr> f) : ExprNode(ExprKind::Tuple, std::move(t)), fields(std::move(f)) {}
};

struct TupleGetItemNode : ExprNode {
  Expr tuple;
  int64_t index;
  TupleGetItemNode(Type t, Expr tup, int64_t i)
      : ExprNode(ExprKind::TupleGetItem, std::move(t)), tuple(std::move(tup)), index(i) {}
};

// Checked downcasts: as<CallNode>(e) is nullptr when e is not a call.
template <typename T>
const T* as(const Expr& e);
#define KILN_AS(name)                                                                          \
  template <>                                                                                  \
  inline const name##Node* as<name##Node>(const Expr& e) {                                     \
    return e && e->kind == ExprKind::name ? static_cast<const name##Node*>(e.get()) : nullptr; \
  }
KILN_EXPR_KINDS(KILN_AS)
#undef KILN_AS

// Constructors. Each computes the node's type and throws kiln::Error (with
// `loc` when given) on a type or attribute error.
Var make_var(std::string name, Type type);
Expr make_constant(Tensor value, std::string name = "");
Expr make_op_call(const OpDef& op, std::vector<Expr> args, const Attrs& attrs = {},
                  const SourceLoc& loc = {});
Expr make_op_call(std::string_view op_name, std::vector<Expr> args, const Attrs& attrs = {},
                  const SourceLoc& loc = {});
// A call of a module function; ret_type is the callee's return type and
// param_types its parameter types, checked against the arguments.
Expr make_function_call(std::string callee, const std::vector<Type>& param_types, Type ret_type,
                        std::vector<Expr> args, const SourceLoc& loc = {});
Expr make_tuple(std::vector<Expr> fields);
Expr make_tuple_get_item(Expr tuple, int64_t index, const SourceLoc& loc = {});

// ---------------------------------------------------------------- functions and modules

struct Binding {
  Var var;
  Expr value;  // a Call, Tuple, TupleGetItem, Constant or Var
};

struct FunctionNode {
  std::string name;  // without '@'
  std::vector<Var> params;
  std::vector<Binding> bindings;
  Expr result;  // a Var, Constant or Tuple of those
  Type ret_type;
  Attrs attrs;  // Composite, Codegen, global_symbol, Primitive, ...
};
using Function = std::shared_ptr<const FunctionNode>;

// ret_type is the type of result; throws when `declared` is given and differs.
Function make_function(std::string name, std::vector<Var> params, std::vector<Binding> bindings, Expr result,
                       Attrs attrs = {}, Type declared_ret = nullptr, const SourceLoc& loc = {});

// A unit of compilation: graph functions in order, plus module attributes.
struct Module {
  std::vector<Function> functions;
  // Tensor-level `prim` functions, in order (printed after graph functions).
  std::vector<std::shared_ptr<const tir::PrimFuncNode>> prim_functions;
  Attrs attrs;

  const FunctionNode* find(const std::string& name) const;
  Function find_function(const std::string& name) const;
  // Replaces the function of the same name, or appends.
  void set(Function f);
  void remove(const std::string& name);
};

// ---------------------------------------------------------------- structure

bool structural_equal(const Module& a, const Module& b);
bool structural_equal(const FunctionNode& a, const FunctionNode& b);
size_t structural_hash(const Module& m);
size_t structural_hash(const FunctionNode& f);

// Checks single assignment, definition before use, types of every binding
// against its value, calls of existing functions with matching types, and the
// return type. Throws kiln::Error naming the function and the binding.
void verify_module(const Module& m);

}  // namespace kiln
