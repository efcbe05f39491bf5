// Expression parser and evaluator; the grammar and the exact cases are listed in math_expr.h.
#include "eval/math_expr.h"

#include <cmath>
#include <functional>

namespace hogwild::eval {
namespace {

struct ParseFail {};

const std::set<std::string>& greek() {
  static const std::set<std::string> g = {
      "\\alpha",  "\\beta",   "\\gamma",    "\\delta", "\\epsilon", "\\varepsilon", "\\zeta",
      "\\eta",    "\\theta",  "\\vartheta", "\\iota",  "\\kappa",   "\\lambda",     "\\mu",
      "\\nu",     "\\xi",     "\\rho",      "\\sigma", "\\tau",     "\\upsilon",    "\\phi",
      "\\varphi", "\\chi",    "\\psi",      "\\omega", "\\Gamma",   "\\Delta",      "\\Theta",
      "\\Lambda", "\\Xi",     "\\Sigma",    "\\Phi",   "\\Psi",     "\\Omega",      "\\hbar",
      "\\ell",    "\\varrho", "\\Pi"};
  return g;
}

const std::set<std::string>& functions() {
  static const std::set<std::string> f = {"\\sin",    "\\cos",    "\\tan",  "\\cot",  "\\sec",
                                          "\\csc",    "\\ln",     "\\log",  "\\exp",  "\\arcsin",
                                          "\\arccos", "\\arctan", "\\sinh", "\\cosh", "\\tanh"};
  return f;
}

const std::set<std::string>& decorations() {
  static const std::set<std::string> d = {"\\vec",    "\\hat",     "\\bar",
                                          "\\tilde",  "\\mathcal", "\\overline",
                                          "\\dot",    "\\ddot",    "\\overrightarrow",
                                          "\\mathbb", "\\widehat"};
  return d;
}

mpq_class decimal(const std::string& s) {
  size_t dot = s.find('.');
  if (dot == std::string::npos) return mpq_class(mpz_class(s, 10));
  std::string digits = s.substr(0, dot) + s.substr(dot + 1);
  mpz_class den;
  mpz_ui_pow_ui(den.get_mpz_t(), 10, s.size() - dot - 1);
  mpq_class q(mpz_class(digits.empty() ? "0" : digits, 10), den);
  q.canonicalize();
  return q;
}

Expr node(Expr::Kind k, std::vector<Expr> args = {}) {
  Expr e;
  e.kind = k;
  e.args = std::move(args);
  return e;
}

Expr number(const mpq_class& q) {
  Expr e;
  e.q = q;
  return e;
}

class Parser {
 public:
  Parser(const std::vector<Token>& t, size_t b, size_t e) {
    // "\frac12" and "\sqrt2": a command's undelimited argument is one character.
    for (size_t i = b; i < e; ++i) {
      const bool one_char_args =
          i > b && t[i - 1].kind == Token::command &&
          (t[i - 1].text == "\\frac" || t[i - 1].text == "\\sqrt" || t[i - 1].text == "\\binom");
      if (one_char_args && t[i].kind == Token::number && t[i].text.size() > 1 &&
          t[i].text.find('.') == std::string::npos) {
        for (char c : t[i].text) t_.push_back({Token::number, std::string(1, c)});
      } else {
        t_.push_back(t[i]);
      }
    }
  }

  Expr all() {
    Expr e = sum();
    if (p_ != t_.size()) throw ParseFail{};
    return e;
  }

 private:
  bool sym(const char* s) const {
    return p_ < t_.size() && t_[p_].kind == Token::symbol && t_[p_].text == s;
  }
  bool cmd(const char* s) const {
    return p_ < t_.size() && t_[p_].kind == Token::command && t_[p_].text == s;
  }
  void expect(const char* s) {
    if (!sym(s) && !cmd(s)) throw ParseFail{};
    ++p_;
  }

  Expr sum() {
    Expr e = product();
    while (sym("+") || sym("-")) {
      bool minus = sym("-");
      ++p_;
      Expr r = product();
      e = node(Expr::add, {e, minus ? node(Expr::neg, {r}) : r});
    }
    return e;
  }

  bool starts_factor() const {
    if (p_ >= t_.size()) return false;
    const Token& k = t_[p_];
    if (k.kind == Token::letter || k.kind == Token::number) return true;
    if (k.kind == Token::command)
      return k.text == "\\frac" || k.text == "\\sqrt" || k.text == "\\pi" || k.text == "\\binom" ||
             k.text == "\\infty" || k.text == "\\lfloor" || k.text == "\\lceil" ||
             greek().count(k.text) || functions().count(k.text) || decorations().count(k.text);
    return k.kind == Token::symbol && (k.text == "(" || k.text == "{");
  }

  Expr product() {
    Expr e = unary();
    bool last_number = last_was_number_;
    for (;;) {
      if (sym("*") || cmd("\\cdot") || cmd("\\times")) {
        ++p_;
        e = node(Expr::mul, {e, unary()});
      } else if (sym("/") || cmd("\\div")) {
        ++p_;
        e = node(Expr::mul, {e, node(Expr::inv, {unary()})});
      } else if (starts_factor()) {
        if (last_number && t_[p_].kind == Token::number) throw ParseFail{};  // "2 3"
        e = node(Expr::mul, {e, power()});
      } else {
        break;
      }
      last_number = last_was_number_;
    }
    return e;
  }

  Expr unary() {
    if (sym("-")) {
      ++p_;
      return node(Expr::neg, {unary()});
    }
    if (sym("+")) {
      ++p_;
      return unary();
    }
    return power();
  }

  Expr power() {
    Expr base = postfix();
    if (sym("^")) {
      ++p_;
      last_was_number_ = false;
      Expr ex = sym("-") ? (++p_, node(Expr::neg, {postfix()})) : postfix();
      return node(Expr::pow, {base, ex});
    }
    return base;
  }

  Expr postfix() {
    Expr e = primary();
    while (sym("!")) {
      ++p_;
      e = node(Expr::fact, {e});
    }
    return e;
  }

  /// A command argument: {group} or one token.
  Expr arg() {
    if (sym("{")) {
      ++p_;
      Expr e = sum();
      expect("}");
      return e;
    }
    return primary();
  }

  /// Canonical text of a subscript or decorated argument: its token texts joined.
  std::string raw_group() {
    std::string s;
    if (sym("{")) {
      int depth = 0;
      do {
        if (p_ >= t_.size()) throw ParseFail{};
        if (sym("{")) ++depth;
        if (sym("}")) --depth;
        s += t_[p_].text;
        ++p_;
      } while (depth > 0);
      return s.substr(1, s.size() - 2);
    }
    if (p_ >= t_.size()) throw ParseFail{};
    return t_[p_++].text;
  }

  Expr variable(std::string name) {
    if (sym("_")) {
      ++p_;
      name.append("_").append(raw_group());
    }
    while (sym("'")) {
      ++p_;
      name += "'";
    }
    Expr e;
    e.kind = Expr::var;
    e.name = name;
    return e;
  }

  Expr primary() {
    if (p_ >= t_.size()) throw ParseFail{};
    last_was_number_ = false;
    const Token k = t_[p_++];
    switch (k.kind) {
      case Token::number:
        last_was_number_ = true;
        return number(decimal(k.text));
      case Token::letter:
        return variable(k.text);
      case Token::word:
        throw ParseFail{};
      case Token::symbol:
        if (k.text == "(" || k.text == "[" || k.text == "{") {
          Expr e = sum();
          expect(k.text == "(" ? ")" : k.text == "[" ? "]" : "}");
          last_was_number_ = false;  // "(n-2) 2^n" multiplies
          return e;
        }
        if (k.text == "|") {
          Expr e = sum();
          expect("|");
          return node(Expr::abs, {e});
        }
        throw ParseFail{};
      case Token::command:
        return command(k.text);
    }
    throw ParseFail{};
  }

  Expr command(const std::string& c) {
    if (c == "\\frac") {
      Expr a = arg();
      Expr b = arg();
      return node(Expr::mul, {a, node(Expr::inv, {b})});
    }
    if (c == "\\sqrt") {
      Expr index = number(2);
      if (sym("[")) {
        ++p_;
        index = sum();
        expect("]");
      }
      return node(Expr::pow, {arg(), node(Expr::inv, {index})});
    }
    if (c == "\\binom") {
      Expr a = arg();
      return node(Expr::binom, {a, arg()});
    }
    if (c == "\\pi") return node(Expr::pi);
    if (c == "\\infty") return node(Expr::inf);
    if (c == "\\lfloor" || c == "\\lceil") {
      Expr e = sum();
      expect(c == "\\lfloor" ? "\\rfloor" : "\\rceil");
      return node(c == "\\lfloor" ? Expr::floor : Expr::ceil, {e});
    }
    if (greek().count(c)) return variable(c);
    if (decorations().count(c)) return variable(c + "{" + raw_group() + "}");
    if (functions().count(c)) {
      Expr f = node(Expr::func);
      f.name = c;
      std::optional<Expr> base, power_of;
      if (c == "\\log" && sym("_")) {
        ++p_;
        base = arg();
      }
      if (sym("^")) {
        ++p_;
        power_of = arg();
      }
      f.args.push_back(sym("(") ? primary() : power());
      if (base) f.args.push_back(*base);
      return power_of ? node(Expr::pow, {f, *power_of}) : f;
    }
    throw ParseFail{};
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  bool last_was_number_ = false;
};

Value exact(mpq_class q) {
  Value v;
  v.q = std::move(q);
  return v;
}

Value approx(long double f) {
  Value v;
  v.exact = false;
  v.f = f;
  return v;
}

/// The exact n-th root of a non-negative rational when there is one.
std::optional<mpq_class> exact_root(const mpq_class& q, unsigned long n) {
  mpz_class a, b;
  if (mpz_root(a.get_mpz_t(), q.get_num_mpz_t(), n) == 0) return std::nullopt;
  if (mpz_root(b.get_mpz_t(), q.get_den_mpz_t(), n) == 0) return std::nullopt;
  return mpq_class(a, b);
}

std::optional<Value> power_value(const Value& b, const Value& e) {
  if (b.exact && e.exact && e.q.get_den() == 1 && abs(e.q.get_num()) <= 4096) {
    long n = e.q.get_num().get_si();
    size_t bits = mpz_sizeinbase(b.q.get_num_mpz_t(), 2) + mpz_sizeinbase(b.q.get_den_mpz_t(), 2);
    if (bits * static_cast<size_t>(std::labs(n)) <= (1u << 22)) {
      if (b.q == 0 && n < 0) return std::nullopt;
      mpz_class num, den;
      mpz_pow_ui(num.get_mpz_t(), b.q.get_num_mpz_t(), static_cast<unsigned long>(std::labs(n)));
      mpz_pow_ui(den.get_mpz_t(), b.q.get_den_mpz_t(), static_cast<unsigned long>(std::labs(n)));
      mpq_class r = n >= 0 ? mpq_class(num, den) : mpq_class(den, num);
      r.canonicalize();
      return exact(r);
    }
  }
  if (b.exact && e.exact && b.q >= 0 && e.q.get_den() <= 64 && abs(e.q.get_num()) <= 4096) {
    if (auto r = exact_root(b.q, e.q.get_den().get_ui())) {
      Value root = exact(*r);
      return power_value(root, exact(mpq_class(e.q.get_num())));
    }
  }
  long double x = b.approx(), y = e.approx();
  if (x < 0) {
    // Odd roots of negatives (cube roots): (-x)^(p/q) with q odd.
    if (e.exact && e.q.get_den() % 2 == 1) {
      long double r = powl(-x, y);
      return approx(e.q.get_num() % 2 == 0 ? r : -r);
    }
    if (y != std::floor(y)) return std::nullopt;
  }
  if (x == 0 && y < 0) return std::nullopt;
  return approx(powl(x, y));
}

/// n! of an exact integer 0 <= n <= 20000, else Gamma(n + 1) in long double; nullopt at the
/// poles (negative integers).
std::optional<Value> factorial_value(const Value& a) {
  if (a.exact && a.q.get_den() == 1 && a.q >= 0 && a.q <= 20000) {
    mpz_class r;
    mpz_fac_ui(r.get_mpz_t(), a.q.get_num().get_ui());
    return exact(mpq_class(r));
  }
  long double x = a.approx();
  if (x < 0 && x == std::floor(x)) return std::nullopt;
  return approx(tgammal(x + 1));
}

/// binom(n, k): exact for integers 0 <= n <= 10^6 and k >= 0 (0 when k > n), else through
/// Gamma in long double.
Value binomial_value(const Value& n, const Value& k) {
  if (n.exact && k.exact && n.q.get_den() == 1 && k.q.get_den() == 1 && n.q >= 0 &&
      n.q <= 1000000 && k.q >= 0) {
    if (k.q > n.q) return exact(0);
    mpz_class r;
    mpz_bin_uiui(r.get_mpz_t(), n.q.get_num().get_ui(), k.q.get_num().get_ui());
    return exact(mpq_class(r));
  }
  long double x = n.approx(), y = k.approx();
  return approx(tgammal(x + 1) / (tgammal(y + 1) * tgammal(x - y + 1)));
}

std::optional<Value> eval(const Expr& e, const std::map<std::string, Value>& vars);

/// The named function e.name (\ln, \log with an optional base e.args[1], \exp, the trig and
/// hyperbolic functions and their inverses) of its first argument's value x, in long double;
/// nullopt outside the domain or for an unknown name.
std::optional<Value> function_value(const Expr& e, long double x,
                                    const std::map<std::string, Value>& vars) {
  const std::string& f = e.name;
  if (f == "\\ln" || f == "\\log") {
    if (x <= 0) return std::nullopt;
    if (e.args.size() == 2) {
      auto b = eval(e.args[1], vars);
      if (!b || b->approx() <= 0 || b->approx() == 1) return std::nullopt;
      return approx(logl(x) / logl(b->approx()));
    }
    return approx(logl(x));
  }
  if (f == "\\exp") return approx(expl(x));
  if (f == "\\sin") return approx(sinl(x));
  if (f == "\\cos") return approx(cosl(x));
  if (f == "\\tan") return approx(tanl(x));
  if (f == "\\cot") return approx(1 / tanl(x));
  if (f == "\\sec") return approx(1 / cosl(x));
  if (f == "\\csc") return approx(1 / sinl(x));
  if (f == "\\arcsin" || f == "\\arccos") {
    if (x < -1 || x > 1) return std::nullopt;
    return approx(f == "\\arcsin" ? asinl(x) : acosl(x));
  }
  if (f == "\\arctan") return approx(atanl(x));
  if (f == "\\sinh") return approx(sinhl(x));
  if (f == "\\cosh") return approx(coshl(x));
  if (f == "\\tanh") return approx(tanhl(x));
  return std::nullopt;
}

/// The value of e with `vars` bound; nullopt when a variable is unbound or a step is undefined.
std::optional<Value> eval(const Expr& e, const std::map<std::string, Value>& vars) {
  auto sub = [&](size_t i) { return eval(e.args[i], vars); };
  switch (e.kind) {
    case Expr::num:
      return exact(e.q);
    case Expr::var: {
      auto it = vars.find(e.name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    }
    case Expr::add:
    case Expr::mul: {
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      if (a->exact && b->exact)
        return exact(e.kind == Expr::add ? mpq_class(a->q + b->q) : mpq_class(a->q * b->q));
      return approx(e.kind == Expr::add ? a->approx() + b->approx() : a->approx() * b->approx());
    }
    case Expr::neg: {
      auto a = sub(0);
      if (!a) return std::nullopt;
      return a->exact ? exact(-a->q) : approx(-a->f);
    }
    case Expr::inv: {
      auto a = sub(0);
      if (!a || (a->exact ? a->q == 0 : a->f == 0)) return std::nullopt;
      if (a->exact) return exact(1 / a->q);
      return approx(1 / a->f);
    }
    case Expr::pow: {
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      return power_value(*a, *b);
    }
    case Expr::fact: {
      auto a = sub(0);
      if (!a) return std::nullopt;
      return factorial_value(*a);
    }
    case Expr::binom: {
      auto n = sub(0), k = sub(1);
      if (!n || !k) return std::nullopt;
      return binomial_value(*n, *k);
    }
    case Expr::floor:
    case Expr::ceil: {
      auto a = sub(0);
      if (!a) return std::nullopt;
      if (a->exact) {
        mpz_class r;
        if (e.kind == Expr::floor)
          mpz_fdiv_q(r.get_mpz_t(), a->q.get_num_mpz_t(), a->q.get_den_mpz_t());
        else
          mpz_cdiv_q(r.get_mpz_t(), a->q.get_num_mpz_t(), a->q.get_den_mpz_t());
        return exact(mpq_class(r));
      }
      return approx(e.kind == Expr::floor ? floorl(a->f) : ceill(a->f));
    }
    case Expr::abs: {
      auto a = sub(0);
      if (!a) return std::nullopt;
      return a->exact ? exact(abs(a->q)) : approx(fabsl(a->f));
    }
    case Expr::pi:
      return approx(3.141592653589793238462643383279502884L);
    case Expr::inf:
      return approx(INFINITY);
    case Expr::func: {
      auto a = sub(0);
      if (!a) return std::nullopt;
      return function_value(e, a->approx(), vars);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Expr> parse_expr(const std::vector<Token>& t, size_t begin, size_t end) {
  if (begin >= end) return std::nullopt;
  try {
    return Parser(t, begin, end).all();
  } catch (const ParseFail&) {
    return std::nullopt;
  }
}

void collect_vars(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::var) out.insert(e.name);
  for (const Expr& a : e.args) collect_vars(a, out);
}

std::optional<Value> evaluate(const Expr& e, const std::map<std::string, Value>& vars) {
  auto v = eval(e, vars);
  if (v && !v->exact && std::isnan(v->f)) return std::nullopt;
  return v;
}

bool values_equal(const Value& a, const Value& b, double rel, double abs_tol) {
  if (abs_tol > 0) {
    if (a.exact && b.exact) return mpq_class(abs(a.q - b.q)).get_d() <= abs_tol * 1.01;
    return fabsl(a.approx() - b.approx()) <= abs_tol * 1.01L;
  }
  if (a.exact && b.exact) {
    if (a.q == b.q) return true;
    if (rel <= kClosedFormTolerance) return false;
  }
  long double x = a.approx(), y = b.approx();
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return fabsl(x - y) <= std::max(rel, kClosedFormTolerance) * std::max(fabsl(x), fabsl(y));
}

}  // namespace hogwild::eval
