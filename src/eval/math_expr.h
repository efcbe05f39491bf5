// Math expressions of answers: a parser over latex.h tokens and an evaluator with exact rational
// arithmetic (GMP, Debian libgmp-dev) where the value is rational, long double otherwise.
//
// Grammar (precedence low to high): sum (+ -) > product (* \cdot \times / \div, implicit
// multiplication of adjacent factors, except two numbers) > unary minus/plus > power (^, right
// associative) > postfix ! > primary. Primaries: numbers, one-letter variables (with a subscript:
// x_1, U_{c}; decorated: \vec{p} \hat{z} \bar{x} \tilde{x} \mathcal{P}), Greek letters and \hbar
// as variables, ( ) [ ] { } groups, |x|, \frac{a}{b} (also \frac12), \sqrt{x}, \sqrt[n]{x},
// \binom{n}{k}, \lfloor x \rfloor, \lceil x \rceil, \pi, \infty, functions \sin .. \tanh, \ln,
// \log, \log_b, \exp (argument in parentheses or the next factor; \sin^2 x).
// Exact cases: + - * / on rationals; integer powers (|exponent| <= 4096); a rational root of a
// rational when it exists (\sqrt{4/9} = 2/3); n! for 0 <= n <= 20000; \binom with integer
// arguments. Everything else evaluates in long double.
#pragma once

#include <gmpxx.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eval/latex.h"

namespace hogwild::eval {

struct Expr {
  enum Kind { num, var, add, mul, pow, neg, inv, func, fact, pi, inf, binom, floor, ceil, abs };
  Kind kind = num;
  mpq_class q;       ///< num: the value
  std::string name;  ///< var: canonical name ("x", "U_c", "\alpha"); func: "\sin", "\log"
  std::vector<Expr> args;
};

/// Parses tokens [begin, end) as one expression; nullopt when they do not form one (unknown
/// command, words, dangling operator, unbalanced brackets).
std::optional<Expr> parse_expr(const std::vector<Token>& t, size_t begin, size_t end);

/// Variable names used in e.
void collect_vars(const Expr& e, std::set<std::string>& out);

/// A value: exact rational when `exact`, else approximate `f` (inf for \infty).
struct Value {
  bool exact = true;
  mpq_class q;
  long double f = 0;
  long double approx() const { return exact ? static_cast<long double>(q.get_d()) : f; }
};

/// Evaluates e with the variables bound in `vars`; nullopt on a domain error (division by zero,
/// log of a non-positive number, root of a negative number, unbound variable).
std::optional<Value> evaluate(const Expr& e, const std::map<std::string, Value>& vars);

/// Relative tolerance for values that are not both rational: equal closed forms agree to ~1e-18
/// in long double, while a decimal approximation of an irrational needs 12 correct digits to pass.
inline constexpr double kClosedFormTolerance = 1e-12;

/// Value equality. abs_tol > 0: |a - b| <= abs_tol * 1.01 (OlympiadBench's physics tolerance).
/// Else both exact: exact equality, or within `rel` relative when rel > kClosedFormTolerance (the
/// lenient option); otherwise |a - b| <= max(rel, kClosedFormTolerance) * max(|a|, |b|). Equal
/// infinities are equal.
bool values_equal(const Value& a, const Value& b, double rel = 0, double abs_tol = 0);

}  // namespace hogwild::eval
