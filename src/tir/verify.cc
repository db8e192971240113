// The prim-function verifier: what every pass may assume and must keep.
//
// Variables and buffers are used only inside the statement that defines them
// and never shadow a visible name (so the text round-trips); operand types
// agree; buffers are indexed with one integer per dimension; scopes are one of
// the known memory scopes; alignments are powers of two; a Seq is never nested
// and never of one statement; return codes are int32.
#include <unordered_set>

#include "tir/text.h"

namespace kiln::tir {

namespace {

#define KILN_CHECK_V(cond, msg) \
  do {                          \
    if (!(cond)) fail(msg);     \
  } while (0)

class Verifier {
 public:
  explicit Verifier(const PrimFuncNode& f) : f_(f) {}

  void run() {
    for (const PrimParam& p : f_.params) {
      if (p.buffer) {
        check_buffer(*p.buffer, "parameter");
        KILN_CHECK_V(p.var == p.buffer->data,
                     "parameter %" + p.buffer->name + " is not passed as its data handle");
        define_var(p.buffer->data);
        define_buffer(p.buffer);
      } else {
        KILN_CHECK_V(!p.var->dtype.is_vector(), "scalar parameter %" + p.var->name + " is a vector");
        define_var(p.var);
      }
    }
    KILN_CHECK_V(f_.body != nullptr, "the function has no body");
    stmt(f_.body, true);
  }

 private:
  // Throws naming the function and, where known, the statement.
  [[noreturn]] void fail(const std::string& what) {
    std::string msg = "invalid prim function @" + f_.name + ": " + what;
    if (current_) {
      std::string text = print_stmt(current_);
      text = text.substr(0, text.find('\n'));
      msg += "\n  in: " + text;
    }
    throw Error(msg);
  }

  void define(const void* node, const std::string& name) {
    KILN_CHECK_V(!visible_names_.count(name), "%" + name + " is defined twice in one scope");
    visible_.insert(node);
    visible_names_.insert(name);
    defs_.push_back({node, name});
  }
  void define_var(const Var& v) { define(v.get(), v->name); }
  void define_buffer(const Buffer& b) { define(b.get(), b->name); }
  size_t mark() const { return defs_.size(); }
  void pop(size_t m) {
    while (defs_.size() > m) {
      visible_.erase(defs_.back().first);
      visible_names_.erase(defs_.back().second);
      defs_.pop_back();
    }
  }

  void check_buffer(const BufferNode& b, const char* what) {
    KILN_CHECK_V(is_valid_scope(b.scope), std::string(what) + " %" + b.name +
                                              " has an unknown memory scope (known: " + scope_names() + ")");
    KILN_CHECK_V(
        b.alignment > 0 && (b.alignment & (b.alignment - 1)) == 0,
        "buffer %" + b.name + " has alignment " + std::to_string(b.alignment) + ", not a power of two");
    KILN_CHECK_V(!b.dtype.is_handle(), "buffer %" + b.name + " holds handles");
    KILN_CHECK_V(b.data && b.data->dtype.is_handle(), "buffer %" + b.name + " has no data handle");
    KILN_CHECK_V(b.strides.empty() || b.strides.size() == b.shape.size(),
                 "buffer %" + b.name + " has " + std::to_string(b.shape.size()) + " dimensions but " +
                     std::to_string(b.strides.size()) + " strides");
    for (const Expr& e : b.shape) index_expr(e, "an extent of buffer %" + b.name);
    for (const Expr& e : b.strides) index_expr(e, "a stride of buffer %" + b.name);
  }

  void index_expr(const Expr& e, const std::string& what) {
    expr(e);
    KILN_CHECK_V(e->dtype.is_integer(), what + " must be an integer, not " + dtype_str(e->dtype));
  }

  void use_buffer(const Buffer& b, const std::vector<Expr>& indices) {
    KILN_CHECK_V(visible_.count(b.get()), "buffer %" + b->name + " is used outside its definition");
    KILN_CHECK_V(indices.size() == b->shape.size(),
                 "buffer %" + b->name + " has " + std::to_string(b->shape.size()) +
                     " dimensions but is indexed with " + std::to_string(indices.size()));
    for (const Expr& i : indices) index_expr(i, "an index of buffer %" + b->name);
  }

  void expr(const Expr& e) {
    KILN_CHECK_V(e != nullptr, "an expression is missing");
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
        return;
      case ExprKind::StringImm:
        KILN_CHECK_V(in_call_args_, "a string is only allowed as a call argument");
        return;
      case ExprKind::Var: {
        auto& v = static_cast<const VarNode&>(*e);
        KILN_CHECK_V(visible_.count(&v), "%" + v.name + " is used outside its definition");
        return;
      }
      case ExprKind::Binary: {
        auto& n = static_cast<const BinaryNode&>(*e);
        expr(n.a);
        expr(n.b);
        KILN_CHECK_V(n.a->dtype == n.b->dtype, std::string("operands of ") + binary_op_text(n.op) +
                                                   " differ in type: " + dtype_str(n.a->dtype) + " and " +
                                                   dtype_str(n.b->dtype));
        KILN_CHECK_V(!is_shift(n.op) || n.a->dtype.is_integer(),
                     std::string(binary_op_text(n.op)) + " shifts integers, not " + dtype_str(n.a->dtype));
        DataType want = is_comparison(n.op) ? DataType::bool_(n.a->dtype.lanes) : n.a->dtype;
        KILN_CHECK_V(n.dtype == want, std::string("result type of ") + binary_op_text(n.op) + " is " +
                                          dtype_str(n.dtype) + ", expected " + dtype_str(want));
        return;
      }
      case ExprKind::Not:
        expr(static_cast<const NotNode&>(*e).a);
        KILN_CHECK_V(e->dtype.is_bool(), "operand of not must be bool");
        return;
      case ExprKind::Cast: {
        auto& n = static_cast<const CastNode&>(*e);
        expr(n.value);
        KILN_CHECK_V(
            n.value->dtype.lanes == n.dtype.lanes && !n.dtype.is_handle() && !n.value->dtype.is_handle(),
            "cannot cast " + dtype_str(n.value->dtype) + " to " + dtype_str(n.dtype));
        return;
      }
      case ExprKind::Select: {
        auto& n = static_cast<const SelectNode&>(*e);
        expr(n.cond);
        expr(n.true_value);
        expr(n.false_value);
        KILN_CHECK_V(n.cond->dtype.is_bool(), "select condition must be bool");
        KILN_CHECK_V(n.true_value->dtype == n.false_value->dtype, "select branches differ in type");
        return;
      }
      case ExprKind::BufferLoad: {
        auto& n = static_cast<const BufferLoadNode&>(*e);
        use_buffer(n.buffer, n.indices);
        return;
      }
      case ExprKind::Call: {
        auto& n = static_cast<const CallNode&>(*e);
        bool saved = in_call_args_;
        in_call_args_ = n.call_kind == CallKind::Extern;
        for (const Expr& a : n.args) expr(a);
        in_call_args_ = saved;
        if (n.call_kind == CallKind::Intrinsic)
          KILN_CHECK_V(intrinsic_from_name(n.name).has_value(), "unknown intrinsic " + n.name);
        return;
      }
      case ExprKind::Ramp: {
        auto& n = static_cast<const RampNode&>(*e);
        expr(n.base);
        expr(n.stride);
        KILN_CHECK_V(n.base->dtype == n.stride->dtype && n.base->dtype.is_integer(),
                     "ramp base and stride must be integers of one type");
        return;
      }
      case ExprKind::Broadcast:
        expr(static_cast<const BroadcastNode&>(*e).value);
        return;
    }
  }

  void stmt(const Stmt& s, bool block_level) {
    KILN_CHECK_V(s != nullptr, "a statement is missing");
    const Stmt saved = current_;
    current_ = s;
    size_t m = mark();
    switch (s->kind) {
      case StmtKind::For: {
        auto& n = static_cast<const ForNode&>(*s);
        expr(n.min);
        expr(n.extent);
        KILN_CHECK_V(n.min->dtype.is_integer() && !n.min->dtype.is_vector() &&
                         n.min->dtype == n.extent->dtype && n.var->dtype == n.min->dtype,
                     "loop %" + n.var->name + " must have scalar integer bounds of its own type");
        define_var(n.var);
        stmt(n.body, true);
        break;
      }
      case StmtKind::Allocate: {
        auto& n = static_cast<const AllocateNode&>(*s);
        check_buffer(*n.buffer, "allocation");
        define_var(n.buffer->data);
        define_buffer(n.buffer);
        stmt(n.body, true);
        break;
      }
      case StmtKind::DeclBuffer: {
        auto& n = static_cast<const DeclBufferNode&>(*s);
        check_buffer(*n.buffer, "buffer");
        KILN_CHECK_V(
            visible_.count(n.buffer->data.get()),
            "buffer %" + n.buffer->name + " uses %" + n.buffer->data->name + " which is not defined here");
        define_buffer(n.buffer);
        stmt(n.body, true);
        break;
      }
      case StmtKind::BufferStore: {
        auto& n = static_cast<const BufferStoreNode&>(*s);
        use_buffer(n.buffer, n.indices);
        expr(n.value);
        int lanes = 1;
        for (const Expr& i : n.indices) lanes = std::max<int>(lanes, i->dtype.lanes);
        DataType want = n.buffer->dtype.with_lanes(lanes);
        KILN_CHECK_V(n.value->dtype == want, "storing " + dtype_str(n.value->dtype) + " into %" +
                                                 n.buffer->name + " which takes " + dtype_str(want));
        break;
      }
      case StmtKind::LetStmt: {
        auto& n = static_cast<const LetStmtNode&>(*s);
        expr(n.value);
        KILN_CHECK_V(n.var->dtype == n.value->dtype, "let %" + n.var->name + " has type " +
                                                         dtype_str(n.var->dtype) + " but its value is " +
                                                         dtype_str(n.value->dtype));
        define_var(n.var);
        stmt(n.body, true);
        break;
      }
      case StmtKind::IfThenElse: {
        auto& n = static_cast<const IfThenElseNode&>(*s);
        expr(n.cond);
        KILN_CHECK_V(n.cond->dtype == DataType::bool_(),
                     "the condition of if must be bool, not " + dtype_str(n.cond->dtype));
        stmt(n.then_case, true);
        if (n.else_case) stmt(n.else_case, true);
        break;
      }
      case StmtKind::Seq: {
        auto& n = static_cast<const SeqNode&>(*s);
        KILN_CHECK_V(block_level, "a sequence nested directly in a sequence");
        KILN_CHECK_V(n.stmts.size() != 1, "a sequence of one statement (use seq())");
        for (const Stmt& c : n.stmts) stmt(c, false);
        break;
      }
      case StmtKind::Evaluate:
        expr(static_cast<const EvaluateNode&>(*s).value);
        break;
      case StmtKind::Return: {
        auto& n = static_cast<const ReturnNode&>(*s);
        expr(n.value);
        KILN_CHECK_V(n.value->dtype == DataType::int32(),
                     "return takes an int32 code, not " + dtype_str(n.value->dtype));
        break;
      }
    }
    pop(m);
    current_ = saved;
  }
#undef KILN_CHECK_V

  const PrimFuncNode& f_;
  std::unordered_set<const void*> visible_;
  std::unordered_set<std::string> visible_names_;
  std::vector<std::pair<const void*, std::string>> defs_;
  Stmt current_;
  bool in_call_args_ = false;
};

}  // namespace

void verify_prim_func(const PrimFuncNode& f) { Verifier(f).run(); }

}  // namespace kiln::tir
