// Internal: the chat-template parser, split over parser.cpp (statements) and parser_expr.cpp
// (expressions, with jinja2's precedence levels).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "core/error.h"

namespace hogwild::chat::detail {

constexpr int kMaxDepth = 200;  // nesting of expressions and statements

using T = Token::Type;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Body parse_all() {
    Body body = parse_body({});
    return body;
  }

 private:
  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.error(at, "template nested too deeply (limit 200 levels).");
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  [[noreturn]] void error(const Token& at, const std::string& msg) const {
    fail("chat template syntax error at line {}, column {}: {}", at.line, at.col, msg);
  }
  bool is_op(const char* op) const { return cur().type == T::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == T::Name && cur().text == n; }
  void expect_op(const char* op) {
    if (!is_op(op))
      error(cur(), std::string("expected '") + op + "', got " + describe(cur()) + ".");
    next();
  }
  std::string expect_name() {
    if (cur().type != T::Name) error(cur(), "expected a name, got " + describe(cur()) + ".");
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd) error(cur(), "expected '%}', got " + describe(cur()) + ".");
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::Eof:
        return "end of template";
      case T::BlockEnd:
        return "'%}'";
      case T::VarEnd:
        return "'}}'";
      case T::Text:
        return "text";
      case T::String:
        return "a string";
      case T::Int:
      case T::Float:
        return "a number";
      default:
        return "'" + t.text + "'";
    }
  }

  ExprPtr make(Expr::Kind k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  Stmt make_stmt(Stmt::Kind k, const Token& at) {
    Stmt s;
    s.kind = k;
    s.line = at.line;
    s.col = at.col;
    return s;
  }

  // ---- statements (parser.cpp) ----
  Body parse_body(std::initializer_list<const char*> ends);
  Stmt parse_statement();
  Stmt parse_if(const Token& at);
  std::vector<std::string> parse_targets();
  Stmt parse_for(const Token& at);
  Stmt parse_set(const Token& at);
  ExprPtr parse_filter_chain(const Token& at);
  void parse_params(Stmt& s);
  Stmt parse_macro(const Token& at);
  Stmt parse_call_block(const Token& at);
  Stmt parse_filter_block(const Token& at);

  // ---- expressions (parser_expr.cpp) ----
  ExprPtr parse_tuple(bool with_condexpr);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr binary(Expr::Kind k, const Token& at, ExprPtr a, ExprPtr b, std::string op = "");
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_collection(const Token& at);
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_subscript();
  void parse_args(Expr& call);
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filter(ExprPtr arg, bool pipe = true);
  ExprPtr parse_filter_expr(ExprPtr e);
};

}  // namespace hogwild::chat::detail
