// Printer for prim functions. The grammar is in docs/ir.md; the parser
// (parser.cc) reads exactly what this writes.
//
// Scoped statements (allocate, decl_buffer, let) print without braces when
// they are the last statement of their block: their body is then the rest of
// the block. This keeps lowered code flat to read and is unambiguous, because
// a scoped statement followed by other statements of the same block always
// gets braces.
#include <cmath>
#include <cstdio>

#include "kiln/runtime/attrs.h"
#include "tir/text.h"

namespace kiln::tir {

namespace {

int precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::EQ:
      return 3;
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE:
      return 4;
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return 5;
    case BinaryOp::Mul:
    case BinaryOp::Div:
      return 6;
    case BinaryOp::Or:
    case BinaryOp::And:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
    case BinaryOp::NE:
    case BinaryOp::Mod:
    case BinaryOp::Min:
    case BinaryOp::Max:
      return 9;  // printed as calls
  }
  return 9;
}

std::string float_text(double v, DataType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", t.bits == 64 ? 17 : 9, v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void print_expr_to(std::string& out, const Expr& e, int parent_prec);

void print_args(std::string& out, const std::vector<Expr>& args, bool leading_comma = false) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0 || leading_comma) out += ", ";
    print_expr_to(out, args[i], 0);
  }
}

void print_expr_to(std::string& out, const Expr& e, int parent_prec) {
  switch (e->kind) {
    case ExprKind::IntImm: {
      auto& n = static_cast<const IntImmNode&>(*e);
      if (n.dtype.is_bool()) {
        out += n.value ? "true" : "false";
      } else if (n.dtype == DataType::int32()) {
        out += std::to_string(n.value);
      } else {
        out += dtype_str(n.dtype) + "(" + std::to_string(n.value) + ")";
      }
      return;
    }
    case ExprKind::FloatImm: {
      auto& n = static_cast<const FloatImmNode&>(*e);
      if (n.dtype == DataType::float32()) {
        out += float_text(n.value, n.dtype);
      } else {
        out += dtype_str(n.dtype) + "(" + float_text(n.value, n.dtype) + ")";
      }
      return;
    }
    case ExprKind::StringImm:
      out += quote_string(static_cast<const StringImmNode&>(*e).value);
      return;
    case ExprKind::Var:
      out += "%" + static_cast<const VarNode&>(*e).name;
      return;
    case ExprKind::Binary: {
      auto& n = static_cast<const BinaryNode&>(*e);
      if (!is_infix(n.op)) {
        out += binary_op_text(n.op);
        out += "(";
        print_args(out, {n.a, n.b});
        out += ")";
        return;
      }
      int p = precedence(n.op);
      bool paren = p < parent_prec;
      if (paren) out += "(";
      print_expr_to(out, n.a, p);
      out += " ";
      out += binary_op_text(n.op);
      out += " ";
      print_expr_to(out, n.b, p + 1);  // left-associative: a right operand of equal rank needs parens
      if (paren) out += ")";
      return;
    }
    case ExprKind::Not:
      out += "not(";
      print_expr_to(out, static_cast<const NotNode&>(*e).a, 0);
      out += ")";
      return;
    case ExprKind::Cast: {
      auto& n = static_cast<const CastNode&>(*e);
      out += "cast<" + dtype_str(n.dtype) + ">(";
      print_expr_to(out, n.value, 0);
      out += ")";
      return;
    }
    case ExprKind::Select: {
      auto& n = static_cast<const SelectNode&>(*e);
      out += "select(";
      print_args(out, {n.cond, n.true_value, n.false_value});
      out += ")";
      return;
    }
    case ExprKind::BufferLoad: {
      auto& n = static_cast<const BufferLoadNode&>(*e);
      out += "%" + n.buffer->name + "[";
      print_args(out, n.indices);
      out += "]";
      return;
    }
    case ExprKind::Call: {
      auto& n = static_cast<const CallNode&>(*e);
      if (n.call_kind == CallKind::Intrinsic) {
        out += n.name + "(";
        print_args(out, n.args);
      } else {
        out += "call_extern<" + dtype_str(n.dtype) + ">(" + quote_string(n.name);
        print_args(out, n.args, true);
      }
      out += ")";
      return;
    }
    case ExprKind::Ramp: {
      auto& n = static_cast<const RampNode&>(*e);
      out += "ramp(";
      print_args(out, {n.base, n.stride});
      out += ", " + std::to_string(n.lanes) + ")";
      return;
    }
    case ExprKind::Broadcast: {
      auto& n = static_cast<const BroadcastNode&>(*e);
      out += "broadcast(";
      print_expr_to(out, n.value, 0);
      out += ", " + std::to_string(n.lanes) + ")";
      return;
    }
  }
}

void print_expr_list(std::string& out, const std::vector<Expr>& v) {
  out += "(";
  print_args(out, v);
  out += ")";
}

class StmtPrinter {
 public:
  std::string out;

  // A block: a Seq's statements or one statement; the last may print flat.
  void block(const Stmt& s, int indent) {
    if (auto* q = as<SeqNode>(s)) {
      for (size_t i = 0; i < q->stmts.size(); ++i) stmt(q->stmts[i], indent, i + 1 == q->stmts.size());
      return;
    }
    stmt(s, indent, true);
  }

 private:
  void line_start(int indent) { out.append(size_t(indent) * 2, ' '); }

  void braced(const Stmt& body, int indent) {
    out += " {\n";
    block(body, indent + 1);
    line_start(indent);
    out += "}";
  }

  // The body of a scoped statement: flat when last in its block.
  void scoped_body(const Stmt& body, int indent, bool last) {
    if (last) {
      out += "\n";
      block(body, indent);
      return;
    }
    braced(body, indent);
    out += "\n";
  }

  void stmt(const Stmt& s, int indent, bool last) {
    line_start(indent);
    switch (s->kind) {
      case StmtKind::For: {
        auto& n = static_cast<const ForNode&>(*s);
        out += "for %" + n.var->name + " from ";
        print_expr_to(out, n.min, 0);
        out += " extent ";
        print_expr_to(out, n.extent, 0);
        if (n.for_kind != ForKind::Serial) out += std::string(" ") + for_kind_name(n.for_kind);
        braced(n.body, indent);
        out += "\n";
        return;
      }
      case StmtKind::Allocate: {
        auto& n = static_cast<const AllocateNode&>(*s);
        out += "allocate %" + n.buffer->name + ": " + buffer_type_str(*n.buffer, false);
        scoped_body(n.body, indent, last);
        return;
      }
      case StmtKind::DeclBuffer: {
        auto& n = static_cast<const DeclBufferNode&>(*s);
        out += "decl_buffer %" + n.buffer->name + ": " + buffer_type_str(*n.buffer, true);
        scoped_body(n.body, indent, last);
        return;
      }
      case StmtKind::BufferStore: {
        auto& n = static_cast<const BufferStoreNode&>(*s);
        out += "%" + n.buffer->name + "[";
        print_args(out, n.indices);
        out += "] = ";
        print_expr_to(out, n.value, 0);
        out += "\n";
        return;
      }
      case StmtKind::LetStmt: {
        auto& n = static_cast<const LetStmtNode&>(*s);
        out += "let %" + n.var->name + " = ";
        print_expr_to(out, n.value, 0);
        scoped_body(n.body, indent, last);
        return;
      }
      case StmtKind::IfThenElse: {
        auto& n = static_cast<const IfThenElseNode&>(*s);
        out += "if ";
        print_expr_to(out, n.cond, 0);
        braced(n.then_case, indent);
        if (n.else_case) {
          out += " else";
          braced(n.else_case, indent);
        }
        out += "\n";
        return;
      }
      case StmtKind::Seq: {
        // A Seq nested in a block (not normal form): keep its statements visible.
        auto& n = static_cast<const SeqNode&>(*s);
        out += "{\n";
        for (size_t i = 0; i < n.stmts.size(); ++i) stmt(n.stmts[i], indent + 1, i + 1 == n.stmts.size());
        line_start(indent);
        out += "}\n";
        return;
      }
      case StmtKind::Evaluate:
        out += "evaluate ";
        print_expr_to(out, static_cast<const EvaluateNode&>(*s).value, 0);
        out += "\n";
        return;
      case StmtKind::Return:
        out += "return ";
        print_expr_to(out, static_cast<const ReturnNode&>(*s).value, 0);
        out += "\n";
        return;
    }
  }
};

}  // namespace

std::string buffer_type_str(const BufferNode& b, bool always_print_data) {
  std::string out = "Buffer[";
  print_expr_list(out, b.shape);
  out += ", " + dtype_str(b.dtype);
  if (b.scope != MemoryScope::Global) out += std::string(", scope=\"") + scope_name(b.scope) + "\"";
  if (b.alignment != kDefaultAlignment) out += ", align=" + std::to_string(b.alignment);
  if (!b.strides.empty()) {
    out += ", strides=";
    print_expr_list(out, b.strides);
  }
  if (always_print_data || b.data->name != data_var_name(b.name)) out += ", data=%" + b.data->name;
  return out + "]";
}

std::string print_expr(const Expr& e) {
  std::string out;
  print_expr_to(out, e, 0);
  return out;
}

std::string print_stmt(const Stmt& s, int indent) {
  StmtPrinter p;
  p.block(s, indent);
  return p.out;
}

std::string print_prim_func(const PrimFuncNode& f) {
  std::string out = "prim @" + f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (i) out += ", ";
    const PrimParam& p = f.params[i];
    if (p.buffer) {
      out += "%" + p.buffer->name + ": " + buffer_type_str(*p.buffer, false);
    } else {
      out += "%" + p.var->name + ": " + dtype_str(p.var->dtype);
    }
  }
  out += ") {\n";
  out += print_stmt(f.body, 1);
  out += "}\n";
  return out;
}

}  // namespace kiln::tir
