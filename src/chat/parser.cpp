#include "chat/parser.h"

#include "chat/parser_impl.h"

namespace hogwild::chat {
namespace detail {

// Parses until a `{% name %}` with name in `ends` (left unconsumed at the name) or end of input.
Body Parser::parse_body(std::initializer_list<const char*> ends) {
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.type == T::Eof) {
      if (ends.size() != 0)
        error(t, std::string("unexpected end of template: missing '{% ") + *(ends.end() - 1) +
                     " %}'.");
      return body;
    }
    if (t.type == T::Text) {
      Stmt s = make_stmt(Stmt::Kind::Text, t);
      s.text = t.text;
      body.push_back(std::move(s));
      next();
    } else if (t.type == T::VarBegin) {
      next();
      Stmt s = make_stmt(Stmt::Kind::Output, t);
      s.expr = parse_tuple(true);
      if (cur().type != T::VarEnd) error(cur(), "expected '}}', got " + describe(cur()) + ".");
      next();
      body.push_back(std::move(s));
    } else if (t.type == T::BlockBegin) {
      const Token& name = peek();
      if (name.type != T::Name) error(name, "expected a statement name after '{%'.");
      for (const char* e : ends)
        if (name.text == e) {
          next();
          return body;
        }
      next();
      DepthGuard g(*this, name);
      body.push_back(parse_statement());
    } else {
      error(t, "unexpected " + describe(t) + ".");
    }
  }
}

Stmt Parser::parse_statement() {
  const Token& at = cur();
  std::string kw = at.text;
  next();
  if (kw == "if") return parse_if(at);
  if (kw == "for") return parse_for(at);
  if (kw == "set") return parse_set(at);
  if (kw == "macro") return parse_macro(at);
  if (kw == "call") return parse_call_block(at);
  if (kw == "filter") return parse_filter_block(at);
  if (kw == "break" || kw == "continue") {
    Stmt s = make_stmt(kw == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, at);
    expect_block_end();
    return s;
  }
  if (kw == "generation") {  // transformers' AssistantTracker block: renders its body as is
    expect_block_end();
    Stmt s = make_stmt(Stmt::Kind::If, at);
    s.expr = make(Expr::Kind::Literal, at);
    s.expr->value = Value(true);
    s.body = parse_body({"endgeneration"});
    next();
    expect_block_end();
    return s;
  }
  error(at, "unknown or unsupported statement '" + kw +
                "' (chat templates may use if, for, set, macro, call, filter, break, continue).");
}

Stmt Parser::parse_if(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::If, at);
  s.expr = parse_expression(true);
  expect_block_end();
  s.body = parse_body({"elif", "else", "endif"});
  const Token& kw = cur();
  next();
  if (kw.text == "elif") {
    s.else_body.push_back(parse_if(kw));
    return s;  // the nested if consumed endif
  }
  if (kw.text == "else") {
    expect_block_end();
    s.else_body = parse_body({"endif"});
    next();
  }
  expect_block_end();
  return s;
}

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> names;
  bool paren = is_op("(");
  if (paren) next();
  names.push_back(expect_name());
  while (is_op(",")) {
    next();
    if (cur().type != T::Name) break;
    names.push_back(expect_name());
  }
  if (paren) expect_op(")");
  return names;
}

Stmt Parser::parse_for(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::For, at);
  s.targets = parse_targets();
  if (!is_name("in")) error(cur(), "expected 'in' in the for statement.");
  next();
  s.expr = parse_tuple(false);
  if (is_name("if")) {
    next();
    s.cond = parse_expression(true);
  }
  if (is_name("recursive")) error(cur(), "recursive for loops are not supported.");
  expect_block_end();
  s.body = parse_body({"else", "endfor"});
  if (cur().text == "else") {
    next();
    expect_block_end();
    s.else_body = parse_body({"endfor"});
  }
  next();
  expect_block_end();
  return s;
}

Stmt Parser::parse_set(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::Set, at);
  if (cur().type == T::Name && peek().type == T::Op && peek().text == ".") {
    s.targets.push_back(expect_name());
    next();
    s.text = expect_name();  // ns.attr
  } else {
    s.targets = parse_targets();
  }
  if (is_op("=")) {
    next();
    s.expr = parse_tuple(true);
    expect_block_end();
    return s;
  }
  if (s.targets.size() != 1 || !s.text.empty()) error(cur(), "expected '=' in the set statement.");
  s.kind = Stmt::Kind::SetBlock;
  if (is_op("|")) s.expr = parse_filter_chain(at);
  expect_block_end();
  s.body = parse_body({"endset"});
  next();
  expect_block_end();
  return s;
}

// `| f(args) | g` applied to a placeholder literal (the block's rendered body).
ExprPtr Parser::parse_filter_chain(const Token& at) {
  ExprPtr e = make(Expr::Kind::Literal, at);
  while (is_op("|")) e = parse_filter(std::move(e));
  return e;
}

void Parser::parse_params(Stmt& s) {
  expect_op("(");
  while (!is_op(")")) {
    if (!s.params.empty()) expect_op(",");
    if (is_op(")")) break;
    s.params.push_back(expect_name());
    if (is_op("=")) {
      next();
      s.defaults.push_back(parse_expression(true));
    } else {
      s.defaults.push_back(nullptr);
    }
  }
  next();
}

Stmt Parser::parse_macro(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::Macro, at);
  s.text = expect_name();
  parse_params(s);
  expect_block_end();
  s.body = parse_body({"endmacro"});
  next();
  if (cur().type == T::Name) next();  // optional name after endmacro
  expect_block_end();
  return s;
}

Stmt Parser::parse_call_block(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::CallBlock, at);
  if (is_op("(")) parse_params(s);
  s.expr = parse_expression(true);
  if (s.expr->kind != Expr::Kind::Call) error(at, "expected a macro call after 'call'.");
  expect_block_end();
  s.body = parse_body({"endcall"});
  next();
  expect_block_end();
  return s;
}

Stmt Parser::parse_filter_block(const Token& at) {
  Stmt s = make_stmt(Stmt::Kind::FilterBlock, at);
  ExprPtr e = make(Expr::Kind::Literal, at);
  e = parse_filter(std::move(e), /*pipe=*/false);
  while (is_op("|")) e = parse_filter(std::move(e));
  s.expr = std::move(e);
  expect_block_end();
  s.body = parse_body({"endfilter"});
  next();
  expect_block_end();
  return s;
}

}  // namespace detail

std::shared_ptr<const Program> parse_template(const std::string& source) {
  auto p = std::make_shared<Program>();
  p->body = detail::Parser(lex(source)).parse_all();
  return p;
}

}  // namespace hogwild::chat
