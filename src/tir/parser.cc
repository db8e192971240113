// Parser for prim functions, on the shared lexer. It reads what printer.cc
// writes; see docs/ir.md for the grammar.
//
// Names are scoped: a loop variable, a let variable or a buffer is visible in
// the body of the statement that defines it. A name may be reused by a sibling
// scope (two loops over %i) but never shadow one that is visible, so every
// name means one thing where it is read.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "tir/text.h"

namespace kiln::tir {

namespace {

class Parser {
 public:
  explicit Parser(Lexer& lex) : lex_(lex) {}

  // Expressions and statements nest at most this deep, so that no input can
  // overflow the stack (the graph parser caps its nesting the same way).
  static constexpr int kMaxDepth = 256;

  PrimFunc function() {
    lex_.expect_ident("prim");
    Token name = lex_.expect(TokenKind::Global, "the function name (@name)");
    size_t mark = names_.size();
    lex_.expect(TokenKind::LParen, "'('");
    std::vector<PrimParam> params;
    if (!lex_.at(TokenKind::RParen)) {
      do {
        params.push_back(param());
      } while (lex_.accept(TokenKind::Comma));
    }
    lex_.expect(TokenKind::RParen, "')' after the parameters");
    lex_.expect(TokenKind::LBrace, "'{' to start the body");
    Stmt body = block();
    lex_.expect(TokenKind::RBrace, "'}' to end the body");
    pop(mark);
    return make_prim_func(name.text, std::move(params), std::move(body));
  }

 private:
  // ---------------------------------------------------------------- names

  struct Entry {
    std::string name;
    Var var;
    Buffer buffer;
  };

  const Entry* find(const std::string& name) const {
    for (auto it = names_.rbegin(); it != names_.rend(); ++it)
      if (it->name == name) return &*it;
    return nullptr;
  }

  void define(const Token& at, Var var, Buffer buffer) {
    const std::string& name = buffer ? buffer->name : var->name;
    if (find(name)) throw lex_.error_at(at, "%" + name + " is already defined here; choose another name");
    names_.push_back({name, std::move(var), std::move(buffer)});
  }

  void pop(size_t mark) { names_.resize(mark); }

  Var lookup_var(const Token& t) {
    const Entry* e = find(t.text);
    if (!e) throw lex_.error_at(t, "undefined variable %" + t.text);
    if (e->buffer)
      throw lex_.error_at(t, "%" + t.text + " is a buffer; index it (%" + t.text +
                                 "[i]) or use its data handle %" + e->buffer->data->name);
    return e->var;
  }

  Buffer lookup_buffer(const Token& t) {
    const Entry* e = find(t.text);
    if (!e || !e->buffer) throw lex_.error_at(t, "undefined buffer %" + t.text);
    return e->buffer;
  }

  // Runs a constructor, giving its error the location of `at`.
  template <typename F>
  auto located(const Token& at, F&& f) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.loc().known()) throw;
      throw lex_.error_at(at, e.message());
    }
  }

  // ---------------------------------------------------------------- types

  DataType dtype() {
    Token t = lex_.expect(TokenKind::Ident, "a type (int32, float32x8, handle, ...)");
    auto d = parse_dtype(t.text);
    if (!d)
      throw lex_.error_at(t, "unknown type '" + t.text +
                                 "' (expected int8..int64, uint8..uint64, float16..float64, bool or handle, "
                                 "with an optional xLANES)");
    return *d;
  }

  std::vector<Expr> expr_list(TokenKind open, TokenKind close, const char* close_text) {
    lex_.expect(open, open == TokenKind::LParen ? "'('" : "'['");
    std::vector<Expr> out;
    if (!lex_.at(close)) {
      do {
        out.push_back(expr());
      } while (lex_.accept(TokenKind::Comma));
    }
    lex_.expect(close, close_text);
    return out;
  }

  // Buffer[(shape), dtype, key=value...]. `data` is set when data= is given.
  Buffer buffer_type(const std::string& name, Var* data) {
    lex_.expect_ident("Buffer");
    lex_.expect(TokenKind::LBracket, "'[' after Buffer");
    const Token shape_at = lex_.peek();
    std::vector<Expr> shape = expr_list(TokenKind::LParen, TokenKind::RParen, "')' after the shape");
    for (size_t d = 0; d < shape.size(); ++d)
      if (auto n = as_const_int(shape[d]); n && *n < 0)
        throw lex_.error_at(shape_at, "buffer %" + name + " has dimension " + std::to_string(d) + " of " +
                                          std::to_string(*n) + "; a dimension is a size, 0 or more");
    lex_.expect(TokenKind::Comma, "',' and the element type");
    DataType t = dtype();
    MemoryScope scope = MemoryScope::Global;
    int64_t align = kDefaultAlignment;
    std::vector<Expr> strides;
    while (lex_.accept(TokenKind::Comma)) {
      Token key = lex_.expect(TokenKind::Ident, "a buffer property (scope, align, strides, data)");
      lex_.expect(TokenKind::Equals, "'='");
      if (key.text == "scope") {
        Token s = lex_.expect(TokenKind::String, "a memory scope in quotes");
        auto sc = scope_from_name(s.text);
        if (!sc)
          throw lex_.error_at(s, "unknown memory scope \"" + s.text + "\" (known: " + scope_names() + ")");
        scope = *sc;
      } else if (key.text == "align") {
        Token a = lex_.expect(TokenKind::Int, "an alignment in bytes");
        if (a.int_value <= 0 || (a.int_value & (a.int_value - 1)) != 0)
          throw lex_.error_at(a, "alignment must be a power of two, not " + a.text);
        align = a.int_value;
      } else if (key.text == "strides") {
        strides = expr_list(TokenKind::LParen, TokenKind::RParen, "')' after the strides");
      } else if (key.text == "data") {
        Token d = lex_.expect(TokenKind::Local, "the data handle variable (%name)");
        KILN_ASSERT(data, "data pointer slot");
        *data = data_ref_ ? lookup_var(d) : make_var(d.text, DataType::handle());
        data_token_ = d;
      } else {
        throw lex_.error_at(
            key, "unknown buffer property '" + key.text + "' (known: scope, align, strides, data)");
      }
    }
    lex_.expect(TokenKind::RBracket, "']' to close the buffer type");
    if (!strides.empty() && strides.size() != shape.size())
      throw lex_.error_at(lex_.peek(), "buffer %" + name + " has " + std::to_string(shape.size()) +
                                           " dimensions but " + std::to_string(strides.size()) + " strides");
    return make_buffer(name, t, std::move(shape), scope, align, std::move(strides), data ? *data : nullptr);
  }

  // A buffer declared with its own data handle (parameter, allocate).
  Buffer owning_buffer(const Token& name) {
    Var data;
    data_ref_ = false;
    Buffer b = buffer_type(name.text, &data);
    define(data ? data_token_ : name, b->data, nullptr);
    define(name, nullptr, b);
    return b;
  }

  PrimParam param() {
    Token name = lex_.expect(TokenKind::Local, "a parameter (%name)");
    lex_.expect(TokenKind::Colon, "':' and the parameter's type");
    if (lex_.at_ident("Buffer")) return buffer_param(owning_buffer(name));
    Var v = make_var(name.text, dtype());
    define(name, v, nullptr);
    return scalar_param(v);
  }

  // ---------------------------------------------------------------- statements

  Stmt block() {
    size_t mark = names_.size();
    std::vector<Stmt> stmts;
    while (!lex_.at(TokenKind::RBrace)) {
      if (lex_.at(TokenKind::End)) lex_.fail_expected("'}'");
      stmts.push_back(stmt());
    }
    pop(mark);
    return seq(std::move(stmts));
  }

  // The body of a scoped statement: braced, or the rest of the block.
  Stmt scoped_body() {
    if (!lex_.accept(TokenKind::LBrace)) return block();
    Stmt body = block();
    lex_.expect(TokenKind::RBrace, "'}'");
    return body;
  }

  Stmt braced_block() {
    lex_.expect(TokenKind::LBrace, "'{'");
    Stmt body = block();
    lex_.expect(TokenKind::RBrace, "'}'");
    return body;
  }

  Stmt stmt() {
    Nested guard(*this);
    Token t = lex_.peek();
    size_t mark = names_.size();
    if (lex_.accept_ident("for")) {
      Token v = lex_.expect(TokenKind::Local, "the loop variable (%name)");
      lex_.expect_ident("from");
      Expr min = expr();
      lex_.expect_ident("extent");
      Expr extent = expr();
      ForKind kind = ForKind::Serial;
      for (ForKind k : {ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled})
        if (lex_.accept_ident(for_kind_name(k))) kind = k;
      if (!min->dtype.is_integer() || min->dtype.is_vector() || min->dtype != extent->dtype)
        throw lex_.error_at(v, "loop bounds must be scalar integers of one type, not " +
                                   dtype_str(min->dtype) + " and " + dtype_str(extent->dtype));
      Var var = make_var(v.text, min->dtype);
      define(v, var, nullptr);
      Stmt body = braced_block();
      pop(mark);
      return for_loop(var, min, extent, kind, body);
    }
    if (lex_.accept_ident("allocate")) {
      Token name = lex_.expect(TokenKind::Local, "the buffer name (%name)");
      lex_.expect(TokenKind::Colon, "':' and the buffer type");
      Buffer b = owning_buffer(name);
      Stmt body = scoped_body();
      pop(mark);
      return allocate(b, body);
    }
    if (lex_.accept_ident("decl_buffer")) {
      Token name = lex_.expect(TokenKind::Local, "the buffer name (%name)");
      lex_.expect(TokenKind::Colon, "':' and the buffer type");
      Var data;
      data_ref_ = true;
      Buffer b = buffer_type(name.text, &data);
      if (!data) throw lex_.error_at(name, "decl_buffer %" + name.text + " needs data=%handle");
      define(name, nullptr, b);
      Stmt body = scoped_body();
      pop(mark);
      return decl_buffer(b, body);
    }
    if (lex_.accept_ident("let")) {
      Token v = lex_.expect(TokenKind::Local, "the variable (%name)");
      lex_.expect(TokenKind::Equals, "'='");
      Expr value = expr();
      Var var = make_var(v.text, value->dtype);
      define(v, var, nullptr);
      Stmt body = scoped_body();
      pop(mark);
      return let_stmt(var, value, body);
    }
    if (lex_.accept_ident("if")) {
      Expr cond = expr();
      if (!cond->dtype.is_bool() || cond->dtype.is_vector())
        throw lex_.error_at(t, "the condition of if must be bool, not " + dtype_str(cond->dtype));
      Stmt then_case = braced_block();
      Stmt else_case;
      if (lex_.accept_ident("else")) else_case = braced_block();
      return if_then_else(cond, then_case, else_case);
    }
    if (lex_.accept_ident("evaluate")) return evaluate(expr());
    if (lex_.accept_ident("return")) {
      Expr code = expr();
      if (code->dtype != DataType::int32())
        throw lex_.error_at(t, "return takes an int32 code, not " + dtype_str(code->dtype));
      return return_stmt(code);
    }
    if (lex_.at(TokenKind::Local)) {
      Token name = lex_.next();
      Buffer b = lookup_buffer(name);
      std::vector<Expr> indices = expr_list(TokenKind::LBracket, TokenKind::RBracket, "']'");
      lex_.expect(TokenKind::Equals, "'=' in a buffer store");
      Expr value = expr();
      Expr ref = located(name, [&] { return load(b, indices); });
      if (ref->dtype != value->dtype)
        throw lex_.error_at(name, "storing " + dtype_str(value->dtype) + " into %" + b->name +
                                      " which holds " + dtype_str(ref->dtype));
      return store(b, std::move(indices), value);
    }
    lex_.fail_expected(
        "a statement (for, allocate, decl_buffer, let, if, evaluate, return or %buffer[...] = value)");
  }

  // ---------------------------------------------------------------- expressions

  struct BinopToken {
    BinaryOp op;
    int prec;
    int tokens;
  };

  std::optional<BinopToken> peek_binop() {
    const Token& t = lex_.peek();
    auto two = [&](TokenKind second) {
      const Token& u = lex_.peek(1);
      return u.kind == second && Lexer::adjacent(lex_.peek(0), u);
    };
    switch (t.kind) {
      case TokenKind::Plus:
        return BinopToken{BinaryOp::Add, 5, 1};
      case TokenKind::Minus:
        return BinopToken{BinaryOp::Sub, 5, 1};
      case TokenKind::Star:
        return BinopToken{BinaryOp::Mul, 6, 1};
      case TokenKind::Slash:
        return BinopToken{BinaryOp::Div, 6, 1};
      case TokenKind::Less:
        return two(TokenKind::Equals) ? BinopToken{BinaryOp::LE, 4, 2} : BinopToken{BinaryOp::LT, 4, 1};
      case TokenKind::Greater:
        return two(TokenKind::Equals) ? BinopToken{BinaryOp::GE, 4, 2} : BinopToken{BinaryOp::GT, 4, 1};
      case TokenKind::Equals:
        if (two(TokenKind::Equals)) return BinopToken{BinaryOp::EQ, 3, 2};
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  Expr expr(int min_prec = 0) {
    Nested guard(*this);
    Expr lhs = unary();
    while (true) {
      // `%x -1` lexes as %x and -1: a subtraction.
      const Token& t = lex_.peek();
      if ((t.kind == TokenKind::Int || t.kind == TokenKind::Float) && t.text[0] == '-' && 5 >= min_prec) {
        Token n = lex_.next();
        Expr rhs = n.kind == TokenKind::Int ? int_literal(n, DataType::int32(), true)
                                            : float_const(n, -n.float_value);
        lhs = located(n, [&] { return sub(lhs, rhs); });
        continue;
      }
      auto op = peek_binop();
      if (!op || op->prec < min_prec) return lhs;
      Token at = lex_.peek();
      for (int i = 0; i < op->tokens; ++i) lex_.next();
      Expr rhs = expr(op->prec + 1);
      lhs = located(at, [&] { return binary(op->op, lhs, rhs); });
    }
  }

  Expr int_literal(const Token& t, DataType type, bool negate) {
    // `%x -9223372036854775808` subtracts 2^63, which no integer type holds.
    if (negate && t.int_value == std::numeric_limits<int64_t>::min())
      throw lex_.error_at(t, "integer 9223372036854775808 does not fit " + dtype_str(type) +
                                 " (nor int64); write the expression another way");
    int64_t v = negate ? -t.int_value : t.int_value;
    if (type.is_bool() || type.bits < 64) {
      int bits = type.is_bool() ? 1 : type.bits;
      bool ok = type.is_uint() || type.is_bool()
                    ? v >= 0 && (bits == 64 || v < (int64_t(1) << bits))
                    : v >= -(int64_t(1) << (bits - 1)) && v < (int64_t(1) << (bits - 1));
      if (!ok)
        throw lex_.error_at(
            t, "integer " + std::to_string(v) + " does not fit " + dtype_str(type) +
                   (type == DataType::int32() ? "; write int64(" + std::to_string(v) + ")" : ""));
    }
    return int_imm(v, type);
  }

  // A float literal: a number, inf, -inf or nan.
  // A float literal of type t: a finite value beyond the type's range is an
  // error, not a silent infinity.
  Expr float_const(const Token& at, double v, DataType t = DataType::float32()) {
    const double largest = t.bits == 16   ? 65504.0
                           : t.bits == 32 ? double(std::numeric_limits<float>::max())
                                          : 0;
    if (largest > 0 && std::isfinite(v) && std::fabs(v) > largest)
      throw lex_.error_at(at, at.text + " is outside the range of " + dtype_str(t) + " (largest " +
                                  (t.bits == 16 ? std::string("65504") : std::string("3.4028235e38")) +
                                  "); write inf for an infinity");
    return float_imm(v, t);
  }

  std::optional<double> float_literal() {
    const Token& t = lex_.peek();
    if (t.kind == TokenKind::Float || t.kind == TokenKind::Int) return lex_.next().float_value;
    if (t.is_ident("inf")) return lex_.next(), std::numeric_limits<double>::infinity();
    if (t.is_ident("nan")) return lex_.next(), std::numeric_limits<double>::quiet_NaN();
    if (t.kind == TokenKind::Minus && lex_.peek(1).is_ident("inf")) {
      lex_.next();
      lex_.next();
      return -std::numeric_limits<double>::infinity();
    }
    return std::nullopt;
  }

  std::vector<Expr> call_args() {
    return expr_list(TokenKind::LParen, TokenKind::RParen, "')' after the arguments");
  }

  void want_args(const Token& at, const std::vector<Expr>& args, size_t n) {
    if (args.size() != n)
      throw lex_.error_at(
          at, at.text + " takes " + std::to_string(n) + " arguments, not " + std::to_string(args.size()));
  }

  int lane_count(const Token& at, const Expr& e) {
    auto v = as_const_int(e);
    if (!v || *v < 2 || *v > 1024)
      throw lex_.error_at(at, at.text + " needs a constant lane count between 2 and 1024");
    return int(*v);
  }

  Expr unary() {
    Token t = lex_.peek();
    switch (t.kind) {
      case TokenKind::Int:
        lex_.next();
        return int_literal(t, DataType::int32(), false);
      case TokenKind::Float:
        lex_.next();
        return float_const(t, t.float_value);
      case TokenKind::String:
        lex_.next();
        return string_imm(t.text);
      case TokenKind::LParen: {
        lex_.next();
        Expr e = expr();
        lex_.expect(TokenKind::RParen, "')'");
        return e;
      }
      case TokenKind::Minus:
        if (lex_.peek(1).is_ident("inf")) return float_imm(*float_literal());
        throw lex_.error_at(t, "unary minus is only for literals; write 0 - x");
      case TokenKind::Local: {
        lex_.next();
        const Entry* e = find(t.text);
        if (e && e->buffer) {
          Buffer b = e->buffer;
          std::vector<Expr> indices = expr_list(TokenKind::LBracket, TokenKind::RBracket, "']'");
          return located(t, [&] { return load(b, std::move(indices)); });
        }
        return lookup_var(t);
      }
      case TokenKind::Ident:
        return named(lex_.next());
      default:
        lex_.fail_expected("an expression");
    }
  }

  // An expression that starts with a word: literals, casts, calls.
  Expr named(const Token& t) {
    const std::string& w = t.text;
    if (w == "true" || w == "false") return int_imm(w == "true", DataType::bool_());
    if (w == "inf") return float_imm(std::numeric_limits<double>::infinity());
    if (w == "nan") return float_imm(std::numeric_limits<double>::quiet_NaN());
    if (w == "cast" || w == "call_extern") {
      lex_.expect(TokenKind::Less, "'<' and a type");
      DataType type = dtype();
      lex_.expect(TokenKind::Greater, "'>'");
      if (w == "cast") {
        lex_.expect(TokenKind::LParen, "'('");
        Expr v = expr();
        lex_.expect(TokenKind::RParen, "')'");
        return located(t, [&] { return std::make_shared<CastNode>(type, v); });
      }
      lex_.expect(TokenKind::LParen, "'('");
      Token sym = lex_.expect(TokenKind::String, "the C symbol name in quotes");
      std::vector<Expr> args;
      while (lex_.accept(TokenKind::Comma)) args.push_back(expr());
      lex_.expect(TokenKind::RParen, "')' after the arguments");
      return located(sym, [&] { return call_extern(type, sym.text, std::move(args)); });
    }
    if (auto type = parse_dtype(w); type && lex_.at(TokenKind::LParen)) {
      lex_.next();
      Token lit = lex_.peek();
      Expr e;
      if (type->is_float()) {
        auto v = float_literal();
        if (!v) lex_.fail_expected("a float literal");
        e = float_const(lit, *v, *type);
      } else if (lit.kind == TokenKind::Int && !type->is_handle() && !type->is_vector()) {
        lex_.next();
        e = int_literal(lit, *type, false);
      } else {
        lex_.fail_expected("a literal of type " + w);
      }
      lex_.expect(TokenKind::RParen, "')'");
      return e;
    }
    std::vector<Expr> args;
    if (!lex_.at(TokenKind::LParen)) throw lex_.error_at(t, "unknown word '" + w + "' in an expression");
    args = call_args();
    if (w == "select") {
      want_args(t, args, 3);
      return located(t, [&] { return select(args[0], args[1], args[2]); });
    }
    if (w == "ramp") {
      want_args(t, args, 3);
      return located(t, [&] { return ramp(args[0], args[1], lane_count(t, args[2])); });
    }
    if (w == "broadcast") {
      want_args(t, args, 2);
      return located(t, [&] { return broadcast(args[0], lane_count(t, args[1])); });
    }
    if (w == "not") {
      want_args(t, args, 1);
      return located(t, [&] { return logical_not(args[0]); });
    }
#define KILN_TIR_CASE(name, text, infix)                                         \
  if (!infix && w == text) {                                                     \
    want_args(t, args, 2);                                                       \
    return located(t, [&] { return binary(BinaryOp::name, args[0], args[1]); }); \
  }
    KILN_TIR_BINARY_OPS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
    if (auto i = intrinsic_from_name(w))
      return located(t, [&] { return call_intrinsic(*i, std::move(args)); });
    throw lex_.error_at(t, "unknown function '" + w +
                               "' (extern C functions are called as call_extern<type>(\"name\", ...))");
  }

  // One level of nesting while it is parsed; throws past kMaxDepth.
  struct Nested {
    Parser& p;
    explicit Nested(Parser& parser) : p(parser) {
      if (p.depth_ >= kMaxDepth)
        throw p.lex_.error_at(p.lex_.peek(), "nesting is deeper than " + std::to_string(kMaxDepth) +
                                                 " levels; split the expression or the loop nest");
      ++p.depth_;
    }
    ~Nested() { --p.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;
  };
  int depth_ = 0;
  Lexer& lex_;
  std::vector<Entry> names_;
  bool data_ref_ = false;  // data= names an existing variable (decl_buffer)
  Token data_token_;
};

}  // namespace

PrimFunc parse_prim_function(Lexer& lex) { return Parser(lex).function(); }

std::vector<PrimFunc> parse_prim_functions(std::string_view text, const std::string& filename) {
  Lexer lex(text, filename);
  std::vector<PrimFunc> out;
  while (!lex.at(TokenKind::End)) out.push_back(parse_prim_function(lex));
  return out;
}

}  // namespace kiln::tir
