// The .kir parser: text (docs/ir.md) to a Module.
//
// Two passes over the text. The first reads the module attributes and every
// function's signature, and skips its body; the second parses the bodies. So
// a function may call one defined further down, and every call is checked
// against the callee's declared types as it is built.
//
// Nodes are built with the IR's make_* functions, which infer types; their
// errors are re-thrown at the location of the call with the caret context.
// Nesting (tuple types, nested expressions) is capped so that no input can
// overflow the stack.
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "ir/lexer.h"
#include "ir/text.h"
#include "tir/text.h"

namespace kiln {
namespace {

constexpr int kMaxDepth = 64;
// No real tensor comes near this; the cap keeps element counts far from
// int64 overflow in shape arithmetic.
constexpr int64_t kMaxNumel = kMaxShapeExtent;

struct Signature {
  std::vector<Type> params;
  Type ret;
};

// A function whose header is parsed and whose body waits for pass two.
struct PendingFunction {
  std::string name;
  SourceLoc loc;
  std::vector<Var> params;
  std::vector<Token> param_tokens;
  Type ret;
  Token ret_token;
  Attrs attrs;
  Lexer body;  // positioned at the body's '{'
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename, const ConstantStore* side)
      : lex_(text, filename), side_(side) {}

  Module parse_module() {
    Module m;
    if (lex_.at_ident("module")) {
      lex_.next();
      lex_.expect_ident("attrs");
      m.attrs = parse_attr_dict(lex_);
    }
    std::vector<PendingFunction> pending;
    std::map<std::string, SourceLoc> defined;
    while (!lex_.at(TokenKind::End)) {
      const Token& t = lex_.peek();
      if (t.is_ident("def")) {
        pending.push_back(parse_header());
        PendingFunction& f = pending.back();
        auto [it, fresh] = defined.emplace(f.name, f.loc);
        if (!fresh)
          throw lex_.error_at(
              f.loc, "duplicate function @" + f.name + " (first defined at " + it->second.str() + ")");
        signatures_[f.name] = Signature{param_types(f.params), f.ret};
        skip_body(f);
      } else if (t.is_ident("prim")) {
        SourceLoc loc = lex_.loc(t);
        tir::PrimFunc f = tir::parse_prim_function(lex_);
        auto [it, fresh] = defined.emplace(f->name, loc);
        if (!fresh)
          throw lex_.error_at(
              loc, "duplicate function @" + f->name + " (first defined at " + it->second.str() + ")");
        m.prim_functions.push_back(std::move(f));
      } else if (t.is_ident("module")) {
        throw lex_.error_at(t, "module attributes must come before the first function");
      } else {
        lex_.fail_expected("'def' or 'prim'");
      }
    }
    for (auto& f : pending) m.functions.push_back(parse_body(f));
    return m;
  }

 private:
  // ------------------------------------------------------------ structure

  static std::vector<Type> param_types(const std::vector<Var>& params) {
    std::vector<Type> types;
    for (const auto& p : params) types.push_back(p->type);
    return types;
  }

  PendingFunction parse_header() {
    Token def = lex_.next();
    Token name = lex_.expect(TokenKind::Global, "a function name such as @main after 'def'");
    PendingFunction f{name.text, lex_.loc(name), {}, {}, nullptr, {}, {}, lex_};
    std::map<std::string, Token> seen;
    lex_.expect(TokenKind::LParen, "'(' to open the parameter list");
    if (!lex_.at(TokenKind::RParen)) {
      do {
        Token p = lex_.expect(TokenKind::Local, "a parameter such as %x");
        auto [it, fresh] = seen.emplace(p.text, p);
        if (!fresh)
          throw lex_.error_at(
              p, "duplicate parameter %" + p.text + " (first defined at " + lex_.loc(it->second).str() + ")");
        lex_.expect(TokenKind::Colon, "':' and the parameter's type");
        Type type = parse_type(0);
        f.params.push_back(make_var(p.text, type));
        f.param_tokens.push_back(p);
      } while (lex_.accept(TokenKind::Comma));
    }
    lex_.expect(TokenKind::RParen, "',' or ')' in the parameter list");
    lex_.expect(TokenKind::Arrow, "'->' and the return type");
    f.ret_token = lex_.peek();
    f.ret = parse_type(0);
    if (lex_.accept_ident("attrs")) f.attrs = parse_attr_dict(lex_);
    if (!lex_.at(TokenKind::LBrace)) lex_.fail_expected("'{' to open the body of @" + f.name);
    f.body = lex_;
    (void)def;
    return f;
  }

  // Skips a body by matching braces; pass two parses it.
  void skip_body(const PendingFunction& f) {
    Token open = lex_.next();
    int depth = 1;
    while (depth > 0) {
      Token t = lex_.next();
      if (t.is(TokenKind::LBrace)) ++depth;
      if (t.is(TokenKind::RBrace)) --depth;
      if (t.is(TokenKind::End))
        throw lex_.error_at(t, "unexpected end of file: the body of @" + f.name + " opened at " +
                                   lex_.loc(open).str() + " has no closing '}'");
    }
  }

  Function parse_body(PendingFunction& f) {
    Lexer& lex = f.body;
    scope_.clear();
    for (size_t i = 0; i < f.params.size(); ++i)
      scope_[f.params[i]->name] = {f.params[i], lex.loc(f.param_tokens[i])};
    lex.expect(TokenKind::LBrace, "'{'");
    std::vector<Binding> bindings;
    while (!lex.at_ident("return")) {
      if (lex.at(TokenKind::RBrace))
        throw lex.error_at(lex.peek(), "@" + f.name + " has no 'return' before its closing '}'");
      Token v = lex.expect(TokenKind::Local, "a binding such as '%y = ...' or 'return'");
      auto it = scope_.find(v.text);
      if (it != scope_.end())
        throw lex.error_at(
            v, "duplicate variable %" + v.text + " (first defined at " + it->second.loc.str() + ")");
      lex.expect(TokenKind::Equals, "'=' after %" + v.text);
      Expr value = parse_expr(lex, 0);
      Var var = make_var(v.text, value->type);
      scope_[v.text] = {var, lex.loc(v)};
      bindings.push_back({var, value});
    }
    Token ret = lex.next();
    Expr result = parse_expr(lex, 0);
    lex.expect(TokenKind::RBrace, "'}' after the return value of @" + f.name);
    return built(lex, ret, [&] {
      return make_function(f.name, f.params, std::move(bindings), result, f.attrs, f.ret,
                           lex.loc(f.ret_token));
    });
  }

  // Runs a make_* call; its errors get a location (at `where` unless they
  // have one) and the caret context.
  template <typename Fn>
  static auto built(const Lexer& lex, const Token& where, Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const Error& e) {
      if (!e.context().empty()) throw;
      throw lex.error_at(e.loc().known() ? e.loc() : lex.loc(where), e.message());
    }
  }

  struct DepthGuard {
    DepthGuard(Lexer& lex, int depth) {
      if (depth > kMaxDepth)
        throw lex.error_at(lex.peek(), "nesting is deeper than " + std::to_string(kMaxDepth) +
                                           " levels; split the expression into bindings");
    }
  };

  // ------------------------------------------------------------ types

  Type parse_type(int depth) { return parse_type(lex_, depth); }

  // '<=' of a bounded dynamic dimension (TensorDesc::bounded_outer), which
  // only the leading axis may be.
  static void parse_bound_prefix(Lexer& lex, size_t axis) {
    Token less = lex.next();
    if (axis != 0)
      throw lex.error_at(less,
                         "a bounded dynamic dimension (<=N) may only be the leading one (axis 0), not axis " +
                             std::to_string(axis));
    Token eq = lex.peek();
    if (!lex.at(TokenKind::Equals) || !Lexer::adjacent(less, eq))
      throw lex.error_at(eq, "expected '<=' and a bound (such as <=300) in the shape");
    lex.next();
    if (!lex.at(TokenKind::Int) || !Lexer::adjacent(eq, lex.peek()))
      throw lex.error_at(lex.peek(), "expected a bound directly after '<=' (such as <=300)");
  }

  Type parse_type(Lexer& lex, int depth) {
    DepthGuard guard(lex, depth);
    if (lex.accept(TokenKind::LParen)) {
      std::vector<Type> fields;
      if (!lex.at(TokenKind::RParen)) {
        do {
          if (lex.at(TokenKind::RParen)) break;  // (T,)
          fields.push_back(parse_type(lex, depth + 1));
        } while (lex.accept(TokenKind::Comma));
      }
      lex.expect(TokenKind::RParen, "',' or ')' in the tuple type");
      return tuple_type(std::move(fields));
    }
    if (!lex.at_ident("Tensor")) lex.fail_expected("a type such as Tensor[(2, 4), float32]");
    lex.next();
    lex.expect(TokenKind::LBracket, "'[' after Tensor");
    lex.expect(TokenKind::LParen, "'(' to open the shape");
    Shape shape;
    std::vector<std::string> dim_names;
    bool bounded = false;  // the leading dimension is <=N
    int64_t numel = 1;
    std::optional<Token> too_many;
    if (!lex.at(TokenKind::RParen)) {
      do {
        if (lex.at(TokenKind::RParen) && !shape.empty()) break;  // (4,)
        Token d = lex.peek();
        if (lex.accept(TokenKind::Question)) {
          std::string name;
          if (lex.at(TokenKind::Ident) && Lexer::adjacent(d, lex.peek())) name = lex.next().text;
          shape.push_back(kSymbolicDim);
          dim_names.push_back(name);
          continue;
        }
        if (lex.at(TokenKind::Less)) {
          parse_bound_prefix(lex, shape.size());
          bounded = true;
          d = lex.expect(TokenKind::Int, "a bound after '<=' (a dimension such as <=300)");
          if (d.int_value < 0) throw lex.error_at(d, "negative bound " + d.text + " after '<='");
        } else {
          d = lex.expect(TokenKind::Int, "a dimension (an integer, ?name or <=bound)");
          if (d.int_value < 0) throw lex.error_at(d, "negative dimension " + d.text);
        }
        if (d.int_value > kMaxNumel) throw lex.error_at(d, "shape is too large (more than 2^48 elements)");
        // kMaxShapeExtent's rule (check_shape_extent): too many elements is
        // an error unless a later dimension is 0; the error points at the
        // dimension that crossed the limit.
        if (d.int_value > 0 && numel > kMaxNumel / d.int_value) {
          if (!too_many) too_many = d;
          numel = kMaxNumel + 1;
        } else {
          numel *= d.int_value;
        }
        shape.push_back(d.int_value);
      } while (lex.accept(TokenKind::Comma));
    }
    if (numel > kMaxNumel) throw lex.error_at(*too_many, "shape is too large (more than 2^48 elements)");
    lex.expect(TokenKind::RParen, "',' or ')' in the shape");
    lex.expect(TokenKind::Comma, "',' and the element type");
    Token dt = lex.expect(TokenKind::Ident, "an element type such as float32");
    auto dtype = dtype_from_name(dt.text);
    if (!dtype)
      throw lex.error_at(dt, "unknown element type '" + dt.text +
                                 "' (known: float32, float16, int8, uint8, int32, int64, bool)");
    lex.expect(TokenKind::RBracket, "']' to close the tensor type");
    if (dim_names.empty()) return tensor_type(TensorDesc{std::move(shape), *dtype, bounded});
    auto t = std::make_shared<TypeNode>();
    t->kind = TypeNode::Kind::Tensor;
    t->tensor = TensorDesc{std::move(shape), *dtype, bounded};
    t->dim_names = std::move(dim_names);
    return t;
  }

  // ------------------------------------------------------------ attributes

  // {key = value, ...}; keys are identifiers or strings.
  static Attrs parse_attr_dict(Lexer& lex) {
    Attrs attrs;
    lex.expect(TokenKind::LBrace, "'{' to open the attributes");
    if (!lex.at(TokenKind::RBrace)) {
      do {
        Token key = lex.peek();
        if (!key.is(TokenKind::Ident) && !key.is(TokenKind::String)) lex.fail_expected("an attribute name");
        lex.next();
        if (attrs.has(key.text)) throw lex.error_at(key, "duplicate attribute '" + key.text + "'");
        lex.expect(TokenKind::Equals, "'=' after the attribute name");
        attrs.set(key.text, parse_attr_value(lex));
      } while (lex.accept(TokenKind::Comma));
    }
    lex.expect(TokenKind::RBrace, "',' or '}' in the attributes");
    return attrs;
  }

  // A float literal: a number, nan, inf, -inf, -nan.
  static std::optional<double> accept_special_float(Lexer& lex) {
    bool neg = lex.at(TokenKind::Minus);
    const Token& w = lex.peek(neg ? 1 : 0);
    if (!w.is_ident("inf") && !w.is_ident("nan")) return std::nullopt;
    bool inf = w.text == "inf";  // read before next() moves the token
    if (neg) lex.next();
    lex.next();
    double v = inf ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    return neg ? -v : v;
  }

  static AttrValue parse_attr_value(Lexer& lex) {
    if (lex.at(TokenKind::String)) return lex.next().text;
    if (lex.at(TokenKind::Int)) return lex.next().int_value;
    if (lex.at(TokenKind::Float)) return lex.next().float_value;
    if (auto f = accept_special_float(lex)) return *f;
    if (!lex.at(TokenKind::LBracket))
      lex.fail_expected("an attribute value (integer, float, string or list)");
    lex.next();
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool any_float = false;
    if (!lex.at(TokenKind::RBracket)) {
      do {
        if (lex.at(TokenKind::Int)) {
          Token t = lex.next();
          ints.push_back(t.int_value);
          floats.push_back(t.float_value);
        } else if (lex.at(TokenKind::Float)) {
          floats.push_back(lex.next().float_value);
          any_float = true;
        } else if (auto f = accept_special_float(lex)) {
          floats.push_back(*f);
          any_float = true;
        } else {
          lex.fail_expected("a number in the list");
        }
      } while (lex.accept(TokenKind::Comma));
    }
    lex.expect(TokenKind::RBracket, "',' or ']' in the list");
    if (any_float) return floats;
    return ints;
  }

  // ------------------------------------------------------------ expressions

  Expr parse_expr(Lexer& lex, int depth) {
    DepthGuard guard(lex, depth);
    Token start = lex.peek();
    Expr e = parse_primary(lex, depth);
    while (lex.at(TokenKind::Dot)) {
      Token dot = lex.next();
      Token idx = lex.peek();
      // `%t.0.1` lexes as '.', then the float 0.1: two field indices.
      std::vector<int64_t> indices;
      if (idx.is(TokenKind::Int) && idx.int_value >= 0) {
        indices.push_back(idx.int_value);
      } else if (idx.is(TokenKind::Float) && idx.text.find_first_of("eE-") == std::string::npos) {
        size_t p = idx.text.find('.');
        for (auto part : {idx.text.substr(0, p), idx.text.substr(p + 1)}) {
          if (part.size() > 18) throw lex.error_at(idx, "field index " + part + " is too large");
          indices.push_back(std::stoll(part));
        }
      } else {
        lex.fail_expected("a field index after '.'");
      }
      lex.next();
      for (int64_t i : indices) e = built(lex, idx, [&] { return make_tuple_get_item(e, i, lex.loc(idx)); });
      (void)dot;
    }
    (void)start;
    return e;
  }

  Expr parse_primary(Lexer& lex, int depth) {
    Token t = lex.peek();
    switch (t.kind) {
      case TokenKind::Local: {
        lex.next();
        auto it = scope_.find(t.text);
        if (it == scope_.end()) throw lex.error_at(t, "use of undefined variable %" + t.text);
        return it->second.var;
      }
      case TokenKind::Global:
        return parse_function_call(lex, depth);
      case TokenKind::LParen:
        return parse_tuple(lex, depth);
      case TokenKind::Ident:
        if (t.text == "const" && lex.peek(1).is(TokenKind::LParen)) return parse_constant(lex);
        return parse_op_call(lex, depth);
      default:
        lex.fail_expected("an expression (a %variable, a call, a tuple or const(...))");
    }
  }

  Expr parse_tuple(Lexer& lex, int depth) {
    Token open = lex.next();
    std::vector<Expr> fields;
    bool comma = false;
    while (!lex.at(TokenKind::RParen)) {
      fields.push_back(parse_expr(lex, depth + 1));
      if (!lex.accept(TokenKind::Comma)) break;
      comma = true;
    }
    lex.expect(TokenKind::RParen, "',' or ')' in the tuple");
    // (e) is e in parentheses; (e,) is a one-field tuple.
    if (fields.size() == 1 && !comma) return fields[0];
    (void)open;
    return make_tuple(std::move(fields));
  }

  // Arguments and keyword attributes of a call, after its '('.
  void parse_call_args(Lexer& lex, int depth, std::vector<Expr>& args, Attrs* attrs) {
    lex.expect(TokenKind::LParen, "'(' to open the arguments");
    bool keywords = false;
    if (!lex.at(TokenKind::RParen)) {
      do {
        if (lex.at(TokenKind::Ident) && lex.peek(1).is(TokenKind::Equals)) {
          Token key = lex.next();
          lex.next();
          if (!attrs) throw lex.error_at(key, "function calls take no attributes");
          if (attrs->has(key.text)) throw lex.error_at(key, "duplicate attribute '" + key.text + "'");
          attrs->set(key.text, parse_attr_value(lex));
          keywords = true;
          continue;
        }
        if (keywords) throw lex.error_at(lex.peek(), "positional argument after keyword attributes");
        args.push_back(parse_expr(lex, depth + 1));
      } while (lex.accept(TokenKind::Comma));
    }
    lex.expect(TokenKind::RParen, "',' or ')' in the arguments");
  }

  Expr parse_op_call(Lexer& lex, int depth) {
    Token first = lex.next();
    std::string name = first.text;
    Token last = first;
    // A dotted op name, written without spaces: nn.conv2d, image.resize2d.
    while (lex.at(TokenKind::Dot) && Lexer::adjacent(last, lex.peek())) {
      // Copies: peek(1) may grow the lookahead and move the tokens.
      Token dot = lex.peek();
      Token part = lex.peek(1);
      if (!part.is(TokenKind::Ident) || !Lexer::adjacent(dot, part)) break;
      lex.next();
      last = lex.next();
      name += "." + last.text;
    }
    if (!lex.at(TokenKind::LParen))
      throw lex.error_at(first, "expected an expression, found identifier '" + name +
                                    "' (an op call needs its arguments in parentheses)");
    const OpDef* op = find_op(name);
    if (!op) throw lex.error_at(first, "unknown op '" + name + "' (`kiln ops` lists the known ops)");
    std::vector<Expr> args;
    Attrs attrs;
    parse_call_args(lex, depth, args, &attrs);
    return built(lex, first, [&] { return make_op_call(*op, std::move(args), attrs, lex.loc(first)); });
  }

  Expr parse_function_call(Lexer& lex, int depth) {
    Token callee = lex.next();
    auto it = signatures_.find(callee.text);
    if (it == signatures_.end()) throw lex.error_at(callee, "call of unknown function @" + callee.text);
    std::vector<Expr> args;
    parse_call_args(lex, depth, args, nullptr);
    const Signature& sig = it->second;
    return built(lex, callee, [&] {
      return make_function_call(callee.text, sig.params, sig.ret, std::move(args), lex.loc(callee));
    });
  }

  // ------------------------------------------------------------ constants

  Expr parse_constant(Lexer& lex) {
    Token kw = lex.next();
    lex.expect(TokenKind::LParen, "'(' after const");
    Token type_tok = lex.peek();
    Type type = parse_type(lex, 0);
    if (!type->is_tensor()) throw lex.error_at(type_tok, "a constant must have a tensor type");
    if (!type->dim_names.empty()) throw lex.error_at(type_tok, "a constant cannot have symbolic dimensions");
    if (type->tensor.bounded_outer)
      throw lex.error_at(type_tok,
                         "a constant cannot have a bounded dynamic dimension (<=N); its shape is known");
    const TensorDesc& desc = type->tensor;
    lex.expect(TokenKind::Comma, "',' and the constant's values or name");
    Expr c;
    if (lex.at(TokenKind::String)) {
      Token name = lex.next();
      c = named_constant(lex, name, desc);
    } else {
      c = make_constant(parse_values(lex, desc));
    }
    lex.expect(TokenKind::RParen, "')' to close const(...)");
    (void)kw;
    return c;
  }

  Expr named_constant(Lexer& lex, const Token& name, const TensorDesc& desc) {
    if (!side_)
      throw lex.error_at(name, "constant \"" + name.text +
                                   "\" refers to the side file, but none was loaded (load the "
                                   "module with load_module, or pass the weights)");
    auto it = side_->find(name.text);
    if (it == side_->end())
      throw lex.error_at(name, "constant \"" + name.text + "\" is not in the side file");
    const Tensor& t = it->second;
    if (t.shape() != desc.shape || t.dtype() != desc.dtype)
      throw lex.error_at(name, "constant \"" + name.text + "\" is " + desc_str({t.shape(), t.dtype()}) +
                                   " in the side file, but " + desc_str(desc) + " here");
    return make_constant(t, name.text);
  }

  // One element of an inline constant, checked against the element type.
  static double parse_element(Lexer& lex, DType dtype) {
    Token t = lex.peek();
    if (dtype == DType::Bool) {
      if (lex.accept_ident("true")) return 1;
      if (lex.accept_ident("false")) return 0;
      lex.fail_expected("true or false");
    }
    if (is_float(dtype)) {
      if (auto f = accept_special_float(lex)) return *f;
      if (!t.is(TokenKind::Int) && !t.is(TokenKind::Float)) lex.fail_expected("a number");
      lex.next();
      // Values that would round to infinity are an error, not a silent inf.
      float f = static_cast<float>(t.float_value);
      bool overflow =
          dtype == DType::Float64
              ? std::isinf(t.float_value)
              : std::isinf(f) || (dtype == DType::Float16 && std::isinf(half_to_float(float_to_half(f)))) ||
                    (dtype == DType::BFloat16 && std::isinf(bfloat16_to_float(float_to_bfloat16(f))));
      if (overflow)
        throw lex.error_at(t, "value " + t.text + " is out of range for " + std::string(dtype_name(dtype)));
      return t.float_value;
    }
    if (!t.is(TokenKind::Int)) lex.fail_expected("an integer");
    lex.next();
    int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    if (dtype == DType::Int8) lo = -128, hi = 127;
    if (dtype == DType::UInt8) lo = 0, hi = 255;
    if (dtype == DType::Int32)
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    if (dtype == DType::Int16) lo = -32768, hi = 32767;
    if (dtype == DType::UInt16) lo = 0, hi = 65535;
    if (dtype == DType::UInt32) lo = 0, hi = std::numeric_limits<uint32_t>::max();
    // The lexer's integers are int64, so uint64 text stops at 2^63 - 1.
    if (dtype == DType::UInt64) lo = 0;
    if (t.int_value < lo || t.int_value > hi)
      throw lex.error_at(t, "value " + t.text + " is out of range for " + std::string(dtype_name(dtype)));
    return 0;  // integers are read from the token by the caller
  }

  static Tensor parse_values(Lexer& lex, const TensorDesc& desc) {
    Token open = lex.expect(TokenKind::LBracket, "'[' and the values, or a side-file name");
    int64_t numel = shape_numel(desc.shape);
    std::vector<double> fvals;
    std::vector<int64_t> ivals;
    bool integer = is_integer(desc.dtype);
    if (!lex.at(TokenKind::RBracket)) {
      do {
        if (static_cast<int64_t>(fvals.size() + ivals.size()) >= numel) {
          // Report now instead of reading an unbounded list.
          throw lex.error_at(lex.peek(), "too many values: " + desc_str(desc) + " has " +
                                             std::to_string(numel) + " element(s)");
        }
        Token t = lex.peek();
        double v = parse_element(lex, desc.dtype);
        if (integer)
          ivals.push_back(t.int_value);
        else
          fvals.push_back(v);
      } while (lex.accept(TokenKind::Comma));
    }
    Token close = lex.peek();
    lex.expect(TokenKind::RBracket, "',' or ']' in the values");
    int64_t count = static_cast<int64_t>(fvals.size() + ivals.size());
    if (count != numel)
      throw lex.error_at(open, "wrong number of values: " + desc_str(desc) + " has " + std::to_string(numel) +
                                   " element(s), got " + std::to_string(count));
    (void)close;
    Tensor out = Tensor::empty(desc.shape, desc.dtype);
    for (int64_t i = 0; i < numel; ++i) {
      switch (desc.dtype) {
        case DType::Float32:
          out.data<float>()[i] = static_cast<float>(fvals[i]);
          break;
        case DType::Float16:
          out.data<uint16_t>()[i] = float_to_half(static_cast<float>(fvals[i]));
          break;
        case DType::Int8:
          out.data<int8_t>()[i] = static_cast<int8_t>(ivals[i]);
          break;
        case DType::UInt8:
          out.data<uint8_t>()[i] = static_cast<uint8_t>(ivals[i]);
          break;
        case DType::Int32:
          out.data<int32_t>()[i] = static_cast<int32_t>(ivals[i]);
          break;
        case DType::Int64:
          out.data<int64_t>()[i] = ivals[i];
          break;
        case DType::Bool:
          out.data<uint8_t>()[i] = fvals[i] != 0 ? 1 : 0;
          break;
        case DType::Float64:
          out.data<double>()[i] = fvals[i];
          break;
        case DType::Int16:
          out.data<int16_t>()[i] = static_cast<int16_t>(ivals[i]);
          break;
        case DType::UInt16:
          out.data<uint16_t>()[i] = static_cast<uint16_t>(ivals[i]);
          break;
        case DType::UInt32:
          out.data<uint32_t>()[i] = static_cast<uint32_t>(ivals[i]);
          break;
        case DType::UInt64:
          out.data<uint64_t>()[i] = static_cast<uint64_t>(ivals[i]);
          break;
        case DType::BFloat16:
          out.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(fvals[i]));
          break;
      }
    }
    return out;
  }

  struct Scoped {
    Var var;
    SourceLoc loc;
  };

  Lexer lex_;
  const ConstantStore* side_;
  std::map<std::string, Signature> signatures_;
  std::map<std::string, Scoped> scope_;
};

}  // namespace

Module parse_module(std::string_view text, const std::string& filename, const ConstantStore* side) {
  return Parser(text, filename, side).parse_module();
}

}  // namespace kiln
