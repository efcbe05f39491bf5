// Expression parsing: jinja2/parser.py's precedence levels, one function each.
#include "chat/parser_impl.h"

namespace hogwild::chat::detail {

// `a, b` becomes a tuple; a single expression stays itself.
ExprPtr Parser::parse_tuple(bool with_condexpr) {
  const Token& at = cur();
  ExprPtr first = parse_expression(with_condexpr);
  if (!is_op(",")) return first;
  ExprPtr t = make(Expr::Kind::TupleLit, at);
  t->args.push_back(std::move(first));
  while (is_op(",")) {
    next();
    if (cur().type == T::VarEnd || cur().type == T::BlockEnd || is_op(")") || is_name("if")) break;
    t->args.push_back(parse_expression(with_condexpr));
  }
  return t;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard g(*this, cur());
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  const Token& at = cur();
  ExprPtr e = parse_or();
  while (is_name("if")) {
    next();
    ExprPtr c = make(Expr::Kind::CondExpr, at);
    ExprPtr cond = parse_or();
    ExprPtr other;
    if (is_name("else")) {
      next();
      other = parse_condexpr();
    }
    c->args.push_back(std::move(cond));
    c->args.push_back(std::move(e));
    c->args.push_back(std::move(other));
    e = std::move(c);
  }
  return e;
}

ExprPtr Parser::binary(Expr::Kind k, const Token& at, ExprPtr a, ExprPtr b, std::string op) {
  ExprPtr e = make(k, at);
  e->name = std::move(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

ExprPtr Parser::parse_or() {
  ExprPtr e = parse_and();
  while (is_name("or")) {
    const Token& at = cur();
    next();
    e = binary(Expr::Kind::Or, at, std::move(e), parse_and());
  }
  return e;
}

ExprPtr Parser::parse_and() {
  ExprPtr e = parse_not();
  while (is_name("and")) {
    const Token& at = cur();
    next();
    e = binary(Expr::Kind::And, at, std::move(e), parse_not());
  }
  return e;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    const Token& at = cur();
    next();
    DepthGuard g(*this, at);
    ExprPtr e = make(Expr::Kind::Not, at);
    e->args.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token& at = cur();
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == T::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
      op = cur().text;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && peek().type == T::Name && peek().text == "in") {
      op = "notin";
      next();
      next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Kind::Compare, at);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr e = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& at = cur();
    std::string op = at.text;
    next();
    e = binary(Expr::Kind::Binary, at, std::move(e), parse_concat(), op);
  }
  return e;
}

ExprPtr Parser::parse_concat() {
  ExprPtr e = parse_math2();
  while (is_op("~")) {
    const Token& at = cur();
    next();
    e = binary(Expr::Kind::Binary, at, std::move(e), parse_math2(), "~");
  }
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr e = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& at = cur();
    std::string op = at.text;
    next();
    e = binary(Expr::Kind::Binary, at, std::move(e), parse_pow(), op);
  }
  return e;
}

ExprPtr Parser::parse_pow() {
  ExprPtr e = parse_unary(true);
  while (is_op("**")) {
    const Token& at = cur();
    next();
    e = binary(Expr::Kind::Binary, at, std::move(e), parse_unary(true), "**");
  }
  return e;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  const Token& at = cur();
  DepthGuard g(*this, at);
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    next();
    e = make(at.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, at);
    e->args.push_back(parse_unary(false));
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

ExprPtr Parser::parse_primary() {
  const Token& at = cur();
  switch (at.type) {
    case T::Name: {
      next();
      ExprPtr e = make(Expr::Kind::Literal, at);
      const std::string& n = at.text;
      if (n == "true" || n == "True") {
        e->value = Value(true);
      } else if (n == "false" || n == "False") {
        e->value = Value(false);
      } else if (n == "none" || n == "None") {
        e->value = Value(None{});
      } else {
        e->kind = Expr::Kind::Name;
        e->name = n;
      }
      return e;
    }
    case T::String: {
      std::string s;
      while (cur().type == T::String) {  // adjacent literals concatenate
        s += cur().text;
        next();
      }
      ExprPtr e = make(Expr::Kind::Literal, at);
      e->value = Value(std::move(s));
      return e;
    }
    case T::Int:
    case T::Float: {
      next();
      ExprPtr e = make(Expr::Kind::Literal, at);
      e->value = at.type == T::Int ? Value(at.ival) : Value(at.fval);
      return e;
    }
    case T::Op:
      if (at.text == "(") {
        next();
        if (is_op(")")) {
          next();
          return make(Expr::Kind::TupleLit, at);
        }
        ExprPtr e = parse_tuple(true);
        expect_op(")");
        return e;
      }
      if (at.text == "[" || at.text == "{") return parse_collection(at);
      [[fallthrough]];
    default:
      error(at, "unexpected " + describe(at) + " in an expression.");
  }
}

ExprPtr Parser::parse_collection(const Token& at) {
  bool dict = at.text == "{";
  const char* close = dict ? "}" : "]";
  next();
  ExprPtr e = make(dict ? Expr::Kind::DictLit : Expr::Kind::ListLit, at);
  while (!is_op(close)) {
    if (!e->args.empty()) {
      expect_op(",");
      if (is_op(close)) break;
    }
    e->args.push_back(parse_expression(true));
    if (dict) {
      expect_op(":");
      e->args.push_back(parse_expression(true));
    }
  }
  next();
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
  while (true) {
    const Token& at = cur();
    if (is_op(".")) {
      next();
      ExprPtr g;
      if (cur().type == T::Name) {
        g = make(Expr::Kind::GetAttr, at);
        g->name = cur().text;
      } else if (cur().type == T::Int) {
        g = make(Expr::Kind::GetItem, at);
        ExprPtr k = make(Expr::Kind::Literal, cur());
        k->value = Value(cur().ival);
        g->args.push_back(std::move(e));
        g->args.push_back(std::move(k));
        next();
        e = std::move(g);
        continue;
      } else {
        error(cur(), "expected an attribute name after '.'.");
      }
      next();
      g->args.push_back(std::move(e));
      e = std::move(g);
    } else if (is_op("[")) {
      next();
      ExprPtr g = make(Expr::Kind::GetItem, at);
      g->args.push_back(std::move(e));
      g->args.push_back(parse_subscript());
      expect_op("]");
      e = std::move(g);
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_subscript() {
  const Token& at = cur();
  ExprPtr parts[3];
  int n = 0;
  bool slice = false;
  while (true) {
    if (!is_op(":") && !is_op("]")) parts[n] = parse_expression(true);
    if (!is_op(":")) break;
    slice = true;
    if (++n > 2) error(cur(), "too many ':' in a slice.");
    next();
  }
  if (!slice) {
    if (!parts[0]) error(at, "expected an index or a slice inside [].");
    return std::move(parts[0]);
  }
  ExprPtr s = make(Expr::Kind::Slice, at);
  for (auto& p : parts) s->args.push_back(std::move(p));
  return s;
}

void Parser::parse_args(Expr& call) {
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      expect_op(",");
      if (is_op(")")) break;
    }
    first = false;
    if (is_op("*") || is_op("**")) error(cur(), "*args and **kwargs in calls are not supported.");
    if (cur().type == T::Name && peek().type == T::Op && peek().text == "=") {
      std::string k = cur().text;
      next();
      next();
      call.kwargs.emplace_back(std::move(k), parse_expression(true));
    } else {
      if (!call.kwargs.empty()) error(cur(), "positional argument follows keyword argument.");
      call.args.push_back(parse_expression(true));
    }
  }
  next();
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  ExprPtr c = make(Expr::Kind::Call, cur());
  c->args.push_back(std::move(callee));
  parse_args(*c);
  return c;
}

ExprPtr Parser::parse_filter(ExprPtr arg, bool pipe) {
  if (pipe) expect_op("|");
  const Token& at = cur();
  ExprPtr f = make(Expr::Kind::Filter, at);
  f->name = expect_name();
  f->args.push_back(std::move(arg));
  if (is_op("(")) parse_args(*f);
  return f;
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      e = parse_filter(std::move(e));
    } else if (is_name("is")) {
      const Token& at = cur();
      next();
      ExprPtr t = make(Expr::Kind::Test, at);
      if (is_name("not")) {
        t->negate = true;
        next();
      }
      t->name = expect_name();
      t->args.push_back(std::move(e));
      if (is_op("(")) {
        parse_args(*t);
      } else if ((cur().type == T::Name && cur().text != "else" && cur().text != "or" &&
                  cur().text != "and" && cur().text != "if" && cur().text != "is" &&
                  cur().text != "in" && cur().text != "not") ||
                 cur().type == T::String || cur().type == T::Int || cur().type == T::Float ||
                 is_op("[") || is_op("{")) {
        // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
        t->args.push_back(parse_postfix(parse_primary()));
      }
      e = std::move(t);
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

}  // namespace hogwild::chat::detail
