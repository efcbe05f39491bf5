#include "chat/parser.h"

#include "chat/lexer.h"
#include "core/error.h"

#include <initializer_list>

namespace hogwild::chat {
namespace {

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
    if (!is_op(op)) error(cur(), std::string("expected '") + op + "', got " + describe(cur()) + ".");
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
      case T::Eof: return "end of template";
      case T::BlockEnd: return "'%}'";
      case T::VarEnd: return "'}}'";
      case T::Text: return "text";
      case T::String: return "a string";
      case T::Int:
      case T::Float: return "a number";
      default: return "'" + t.text + "'";
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

  // ---- statements ----

  // Parses until a `{% name %}` with name in `ends` (left unconsumed at the name) or end of input.
  Body parse_body(std::initializer_list<const char*> ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::Eof) {
        if (ends.size() != 0) error(t, std::string("unexpected end of template: missing '{% ") + *ends.begin() + " %}'.");
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

  Stmt parse_statement() {
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

  Stmt parse_if(const Token& at) {
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

  std::vector<std::string> parse_targets() {
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

  Stmt parse_for(const Token& at) {
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

  Stmt parse_set(const Token& at) {
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
  ExprPtr parse_filter_chain(const Token& at) {
    ExprPtr e = make(Expr::Kind::Literal, at);
    while (is_op("|")) e = parse_filter(std::move(e));
    return e;
  }

  void parse_params(Stmt& s) {
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

  Stmt parse_macro(const Token& at) {
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

  Stmt parse_call_block(const Token& at) {
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

  Stmt parse_filter_block(const Token& at) {
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

  // ---- expressions ----

  // `a, b` becomes a tuple; a single expression stays itself.
  ExprPtr parse_tuple(bool with_condexpr) {
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

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard g(*this, cur());
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
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

  ExprPtr binary(Expr::Kind k, const Token& at, ExprPtr a, ExprPtr b, std::string op = "") {
    ExprPtr e = make(k, at);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      next();
      e = binary(Expr::Kind::Or, at, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      next();
      e = binary(Expr::Kind::And, at, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
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

  ExprPtr parse_compare() {
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

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_concat(), op);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_math2(), "~");
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_pow(), op);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_unary(true), "**");
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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
      default: error(at, "unexpected " + describe(at) + " in an expression.");
    }
  }

  ExprPtr parse_collection(const Token& at) {
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

  ExprPtr parse_postfix(ExprPtr e) {
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

  ExprPtr parse_subscript() {
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
    if (!slice) return std::move(parts[0]);
    ExprPtr s = make(Expr::Kind::Slice, at);
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  void parse_args(Expr& call) {
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

  ExprPtr parse_call(ExprPtr callee) {
    ExprPtr c = make(Expr::Kind::Call, cur());
    c->args.push_back(std::move(callee));
    parse_args(*c);
    return c;
  }

  ExprPtr parse_filter(ExprPtr arg, bool pipe = true) {
    if (pipe) expect_op("|");
    const Token& at = cur();
    ExprPtr f = make(Expr::Kind::Filter, at);
    f->name = expect_name();
    f->args.push_back(std::move(arg));
    if (is_op("(")) parse_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
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
};

}  // namespace

std::shared_ptr<const Program> parse_template(const std::string& source) {
  auto p = std::make_shared<Program>();
  p->body = Parser(lex(source)).parse_all();
  return p;
}

}  // namespace hogwild::chat
