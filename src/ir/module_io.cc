// load_module / save_module: a .kir file plus its side file of named
// constants (an .npz next to it, named by the module attribute `weights`).
#include <filesystem>

#include "ir/lexer.h"
#include "ir/text.h"
#include "ir/visitor.h"
#include "kiln/runtime/npy.h"
#include "runtime/file_io.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The `weights` module attribute, read ahead of the parse so that the side
// file can be loaded first. Anything unusual is left for the parser to report.
std::string weights_attr(std::string_view text, const std::string& filename) {
  try {
    Lexer lex(text, filename);
    if (!lex.accept_ident("module") || !lex.accept_ident("attrs") || !lex.accept(TokenKind::LBrace))
      return {};
    while (!lex.at(TokenKind::RBrace) && !lex.at(TokenKind::End)) {
      Token key = lex.next();
      bool is_key = key.is(TokenKind::Ident) || key.is(TokenKind::String);
      if (is_key && key.text == "weights" && lex.accept(TokenKind::Equals) && lex.at(TokenKind::String))
        return lex.next().text;
    }
  } catch (const Error&) {
  }
  return {};
}

// Names the unnamed constants bigger than the inline limit: c0, c1, ...
class NameBigConstants : public ExprMutator {
 public:
  NameBigConstants(int64_t limit, std::map<std::string, Tensor>& named) : limit_(limit), named_(named) {}

 protected:
  Expr mutate_Constant(const Expr& e, const ConstantNode& n) override {
    if (!n.name.empty() || n.value.numel() <= limit_) return e;
    auto done = renamed_.find(&n);
    if (done != renamed_.end()) return done->second;
    std::string name;
    do name = "c" + std::to_string(next_++);
    while (named_.count(name));
    named_[name] = n.value;
    Expr c = make_constant(n.value, name);
    renamed_[&n] = c;
    return c;
  }

 private:
  int64_t limit_;
  std::map<std::string, Tensor>& named_;
  std::map<const ConstantNode*, Expr> renamed_;
  int next_ = 0;
};

class CollectNamed : public ExprVisitor {
 public:
  explicit CollectNamed(std::map<std::string, Tensor>& named) : named_(named) {}

 protected:
  void visit_Constant(const ConstantNode& n) override {
    if (n.name.empty()) return;
    auto [it, fresh] = named_.emplace(n.name, n.value);
    if (!fresh && !it->second.bitwise_equal(n.value))
      throw Error("two different constants are both named \"" + n.name +
                  "\"; give them distinct names before saving");
  }

 private:
  std::map<std::string, Tensor>& named_;
};

// Every constant written inline, for a destination with no folder to hold a
// side file.
class InlineConstants : public ExprMutator {
 protected:
  Expr mutate_Constant(const Expr& e, const ConstantNode& n) override {
    return n.name.empty() ? e : make_constant(n.value, "");
  }
};

// /dev/null, a pipe, a terminal: a side file cannot sit beside it.
bool is_special_file(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

}  // namespace

Module load_module(const std::string& path) {
  std::string text = read_file(path);
  std::string weights = weights_attr(text, path);
  fs::path side_path;
  bool required = !weights.empty();
  if (required)
    side_path = fs::path(path).parent_path() / weights;
  else
    side_path = fs::path(path).replace_extension(".npz");
  ConstantStore side;
  bool have_side = false;
  std::error_code ec;
  if (required || fs::exists(side_path, ec)) {
    if (!fs::exists(side_path, ec))
      throw Error("'" + path + "' names the side file '" + weights + "', but '" + side_path.string() +
                  "' does not exist");
    side = read_npz(side_path.string());
    have_side = true;
  }
  if (have_side) return parse_module(text, path, &side);
  try {
    return parse_module(text, path, nullptr);
  } catch (const Error& e) {
    // Say which side file was looked for, so the user knows what is missing.
    if (e.message().find("refers to the side file") == std::string::npos) throw;
    throw Error(e.message() + "; no side file '" + side_path.string() + "' was found", e.loc(), e.context());
  }
}

void save_module(const Module& m, const std::string& path, int64_t inline_limit) {
  if (is_special_file(path)) {
    Module out;
    for (const auto& [key, value] : m.attrs.items())
      if (key != "weights") out.attrs.set(key, value);
    InlineConstants inliner;
    for (const auto& f : m.functions) out.functions.push_back(inliner.mutate_function(f));
    out.prim_functions = m.prim_functions;
    return write_file(path, print_module(out));
  }
  std::map<std::string, Tensor> named;
  // Existing names first, so that generated names avoid them.
  for (const auto& f : m.functions) CollectNamed(named).visit_function(*f);
  Module out;
  out.attrs = m.attrs;
  NameBigConstants namer(inline_limit, named);
  for (const auto& f : m.functions) out.functions.push_back(namer.mutate_function(f));
  // Prim functions hold no tensor constants; they are written as they are.
  out.prim_functions = m.prim_functions;
  fs::path side_path = fs::path(path).replace_extension(".npz");
  if (!named.empty()) {
    std::string weights = out.attrs.has("weights") ? out.attrs.get_string("weights") : "";
    if (weights.empty()) weights = side_path.filename().string();
    side_path = fs::path(path).parent_path() / weights;
    out.attrs.set("weights", weights);
    write_npz(side_path.string(), named);
  }
  write_file(path, print_module(out));
}

}  // namespace kiln
