// Answer structure and equivalence; the rules are listed in math_equiv.h.
#include "eval/math_equiv.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <regex>

#include "eval/latex.h"
#include "eval/math_expr.h"

namespace hogwild::eval {
namespace {

struct Answer {
  enum Kind { choice, list, tuple, set, relation, expr, text } kind = text;
  std::string str;              // text: canonical text; choice: the letter
  std::vector<Answer> items;    // list / tuple / set items; relation: lhs, rhs
  std::string open, close, op;  // tuple brackets; relation operator
  Expr e;                       // expr
  std::vector<Token> tokens;    // expr: its tokens (for the numeric-prefix unit rule)
  bool percent = false;
};

bool is_open(const Token& t) {
  return t.kind == Token::symbol &&
         (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "\\{");
}
bool is_close(const Token& t) {
  return t.kind == Token::symbol &&
         (t.text == ")" || t.text == "]" || t.text == "}" || t.text == "\\}");
}

std::string canonical_text(std::string s) {
  std::string out;
  bool space = false;
  for (unsigned char c : s) {
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(c));
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

std::string join(const std::vector<Token>& t, size_t b, size_t e) {
  std::string s;
  for (size_t i = b; i < e; ++i) s += (s.empty() ? "" : " ") + t[i].text;
  return s;
}

/// Top-level positions of tokens for which pred holds (bracket depth 0).
std::vector<size_t> top_level(const std::vector<Token>& t, size_t b, size_t e,
                              const std::function<bool(const Token&)>& pred) {
  std::vector<size_t> at;
  int depth = 0;
  for (size_t i = b; i < e; ++i) {
    if (is_open(t[i]))
      ++depth;
    else if (is_close(t[i]))
      --depth;
    else if (depth == 0 && pred(t[i]))
      at.push_back(i);
  }
  return at;
}

bool is_separator(const Token& t) {
  return (t.kind == Token::symbol && (t.text == "," || t.text == ";")) ||
         (t.kind == Token::word && (t.text == "and" || t.text == "or")) ||
         (t.kind == Token::letter && t.text == "or");
}

bool is_relation(const Token& t) {
  return (t.kind == Token::symbol && (t.text == "=" || t.text == "<" || t.text == ">")) ||
         (t.kind == Token::command && (t.text == "\\le" || t.text == "\\ge" || t.text == "\\ne"));
}

Answer parse_range(const std::vector<Token>& t, size_t b, size_t e);
bool unit_material(const Token& t);

Answer make_text(const std::vector<Token>& t, size_t b, size_t e) {
  Answer a;
  a.kind = Answer::text;
  a.str = canonical_text(join(t, b, e));
  return a;
}

/// Items between b and e split at top-level commas.
std::vector<Answer> comma_items(const std::vector<Token>& t, size_t b, size_t e) {
  std::vector<Answer> items;
  auto commas =
      top_level(t, b, e, [](const Token& k) { return k.kind == Token::symbol && k.text == ","; });
  size_t s = b;
  commas.push_back(e);
  for (size_t c : commas) {
    items.push_back(parse_range(t, s, c));
    s = c + 1;
  }
  return items;
}

/// Matching closer of the opener at b, or npos.
size_t matching(const std::vector<Token>& t, size_t b, size_t e) {
  int depth = 0;
  for (size_t i = b; i < e; ++i) {
    if (is_open(t[i]))
      ++depth;
    else if (is_close(t[i]) && --depth == 0)
      return i;
  }
  return std::string::npos;
}

Answer parse_matrix(const std::vector<Token>& t, size_t b, size_t e) {
  // \begin { pmatrix } rows \end { pmatrix }
  Answer m;
  m.kind = Answer::tuple;
  m.open = "matrix";
  size_t body = b + 4, end = e;
  for (size_t i = body; i < e; ++i)
    if (t[i].kind == Token::command && t[i].text == "\\end") end = i;
  size_t row = body;
  for (size_t i = body; i <= end; ++i) {
    if (i == end || (t[i].kind == Token::command && t[i].text == "\\cr")) {
      if (i > row) {
        Answer r;
        r.kind = Answer::tuple;
        r.open = "row";
        auto amps = top_level(t, row, i, [](const Token& k) { return k.text == "&"; });
        size_t s = row;
        amps.push_back(i);
        for (size_t c : amps) {
          r.items.push_back(parse_range(t, s, c));
          s = c + 1;
        }
        m.items.push_back(r);
      }
      row = i + 1;
    }
  }
  return m;
}

/// One item (no top-level separators).
Answer parse_item(const std::vector<Token>& t, size_t b, size_t e) {
  // Trailing words are units ("10 inches"), unless the item is words only.
  size_t end = e;
  while (end > b && t[end - 1].kind == Token::word) --end;
  if (end == b) return make_text(t, b, e);
  // "12 cm^2": a unit word with an exponent, at the top level (not a subscript such as q_{eff}).
  for (size_t k : top_level(t, b + 1, end, [](const Token& k) { return k.kind == Token::word; }))
    if (std::all_of(t.begin() + k, t.begin() + end, unit_material)) {
      end = k;
      break;
    }
  if (t[b].kind == Token::command && t[b].text == "\\begin" && e - b > 4)
    return parse_matrix(t, b, e);
  auto rel = top_level(t, b, end, is_relation);
  if (rel.size() == 1) {
    Answer a;
    a.kind = Answer::relation;
    a.op = t[rel[0]].text;
    a.items = {parse_item(t, b, rel[0]), parse_item(t, rel[0] + 1, end)};
    if (a.items[0].kind == Answer::text || a.items[1].kind == Answer::text)
      return make_text(t, b, e);
    return a;
  }
  if (rel.size() > 1) return make_text(t, b, e);
  if (is_open(t[b]) && matching(t, b, end) == end - 1 && end - b >= 2) {
    const std::string& o = t[b].text;
    const std::string& c = t[end - 1].text;
    bool comma = !top_level(t, b + 1, end - 1, [](const Token& k) {
                    return k.kind == Token::symbol && k.text == ",";
                  }).empty();
    if (o == "\\{" || (comma && o != "{")) {
      Answer a;
      a.kind = o == "\\{" ? Answer::set : Answer::tuple;
      a.open = o;
      a.close = c;
      a.items = comma_items(t, b + 1, end - 1);
      return a;
    }
  }
  if (auto ex = parse_expr(t, b, end)) {
    Answer a;
    a.kind = Answer::expr;
    a.e = std::move(*ex);
    a.tokens.assign(t.begin() + b, t.begin() + end);
    return a;
  }
  return make_text(t, b, e);
}

Answer parse_range(const std::vector<Token>& t, size_t b, size_t e) {
  if (b >= e) return make_text(t, b, e);
  auto seps = top_level(t, b, e, is_separator);
  auto cups = top_level(t, b, e, [](const Token& k) { return k.text == "\\cup"; });
  seps.insert(seps.end(), cups.begin(), cups.end());
  std::sort(seps.begin(), seps.end());
  if (!seps.empty()) {
    Answer a;
    a.kind = Answer::list;
    size_t s = b;
    seps.push_back(e);
    for (size_t c : seps) {
      if (c > s) a.items.push_back(parse_range(t, s, c));
      s = c + 1;
    }
    if (a.items.size() == 1) return a.items[0];
    return a;
  }
  auto pm = top_level(t, b, e, [](const Token& k) { return k.text == "\\pm" || k.text == "\\mp"; });
  if (pm.size() == 1) {
    Answer a;
    a.kind = Answer::list;
    for (const char* sign : {"+", "-"}) {
      std::vector<Token> v(t.begin() + b, t.begin() + e);
      v[pm[0] - b] = {Token::symbol, sign};
      a.items.push_back(parse_item(v, 0, v.size()));
    }
    return a;
  }
  return parse_item(t, b, e);
}

Answer parse_answer(const std::string& raw, const Normalized& n) {
  static const std::regex choice(R"(^\(?([A-E])\)?$)");
  std::smatch m;
  if (std::regex_match(n.text, m, choice)) {
    Answer a;
    a.kind = Answer::choice;
    a.str = m[1].str();
    return a;
  }
  std::vector<Token> t = tokenize(n.text);
  Answer a = parse_range(t, 0, t.size());
  a.percent = n.had_percent;
  return a;
}

/// Fixed rational points for the numeric identity test: the value of variable `name` at point k.
Value point_value(const std::string& name, int k) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same points on every build
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  long p = 2 + static_cast<long>(h % 89), q = 3 + static_cast<long>((h / 89) % 83);
  mpq_class v(p, q);
  v.canonicalize();
  Value r;
  r.q = v + k;
  return r;
}

bool expr_equal(const Expr& a, const Expr& b, bool pa, bool pb, const MathOptions& o,
                double abs_tol) {
  std::set<std::string> vars;
  collect_vars(a, vars);
  collect_vars(b, vars);
  const double rel = o.rel_tolerance;
  if (vars.empty()) {
    auto va = evaluate(a, {}), vb = evaluate(b, {});
    if (!va || !vb) return false;
    if (values_equal(*va, *vb, rel, abs_tol)) return true;
    if (o.percent_scaled && (pa || pb)) {
      Value s = pa ? *va : *vb, other = pa ? *vb : *va;
      if (s.exact)
        s.q /= 100;
      else
        s.f /= 100;
      return values_equal(s, other, rel, abs_tol);
    }
    return false;
  }
  int agreed = 0;
  for (int k = 0; k < 4; ++k) {
    std::map<std::string, Value> env;
    for (const auto& v : vars) env[v] = point_value(v, k);
    auto va = evaluate(a, env), vb = evaluate(b, env);
    if (!va || !vb) continue;
    if (!values_equal(*va, *vb, std::max(rel, 1e-10), 0))
      return false;  // identity test: rounding of long double
    ++agreed;
  }
  return agreed >= 2;
}

bool has_vars(const Expr& e) {
  std::set<std::string> v;
  collect_vars(e, v);
  return !v.empty();
}

bool unit_material(const Token& t) {
  if (t.kind == Token::letter || t.kind == Token::word || t.kind == Token::number) return true;
  if (t.kind == Token::command)
    return t.text == "\\mu" || t.text == "\\Omega" || t.text == "\\cdot" || t.text == "\\AA";
  return t.text == "/" || t.text == "^" || t.text == "{" || t.text == "}" || t.text == "-" ||
         t.text == "(" || t.text == ")" || t.text == ".";
}

/// The candidate's variable-free numeric prefix when the rest is unit material ("19.3 W").
std::optional<Expr> numeric_prefix(const std::vector<Token>& t) {
  for (size_t k = 1; k < t.size(); ++k) {
    const Token& s = t[k];
    bool starts =
        s.kind == Token::letter || s.kind == Token::word ||
        (s.kind == Token::command && (s.text == "\\mu" || s.text == "\\Omega" || s.text == "\\AA"));
    if (!starts || !std::all_of(t.begin() + k, t.end(), unit_material)) continue;
    if (auto e = parse_expr(t, 0, k); e && !has_vars(*e)) return e;
  }
  return std::nullopt;
}

bool equal(const Answer& c, const Answer& g, const MathOptions& o, double tol);

bool unordered_equal(const std::vector<Answer>& c, const std::vector<Answer>& g,
                     const MathOptions& o, double tol) {
  if (c.size() != g.size()) return false;
  std::vector<bool> used(c.size(), false);
  for (const Answer& x : g) {
    bool found = false;
    for (size_t i = 0; i < c.size() && !found; ++i)
      if (!used[i] && equal(c[i], x, o, tol)) {
        used[i] = true;
        found = true;
      }
    if (!found) return false;
  }
  return true;
}

bool single_variable(const Answer& a) { return a.kind == Answer::expr && a.e.kind == Expr::var; }

bool equal(const Answer& c, const Answer& g, const MathOptions& o, double tol) {
  using K = Answer::Kind;
  if (g.kind == K::choice || c.kind == K::choice) return c.kind == g.kind && c.str == g.str;
  if (g.kind == K::text || c.kind == K::text) return c.kind == g.kind && c.str == g.str;
  // "x = 5" against "5" (either side).
  if (c.kind == K::relation && g.kind != K::relation && c.op == "=" && single_variable(c.items[0]))
    return equal(c.items[1], g, o, tol);
  if (g.kind == K::relation && c.kind != K::relation && g.op == "=" && single_variable(g.items[0]))
    return equal(c, g.items[1], o, tol);
  if (c.kind == K::relation && g.kind == K::relation) {
    auto mirror = [](const std::string& op) {
      return op == "<" ? ">" : op == ">" ? "<" : op == "\\le" ? "\\ge" : op == "\\ge" ? "\\le" : op;
    };
    if (c.op == g.op && equal(c.items[0], g.items[0], o, tol) &&
        equal(c.items[1], g.items[1], o, tol))
      return true;
    if (c.op == mirror(g.op) && equal(c.items[0], g.items[1], o, tol) &&
        equal(c.items[1], g.items[0], o, tol))
      return true;
    if (c.op == "=" && g.op == "=" && c.items[0].kind == K::expr && c.items[1].kind == K::expr &&
        g.items[0].kind == K::expr && g.items[1].kind == K::expr) {
      // Same equation rearranged: lhs - rhs equal up to sign.
      Expr dc{Expr::add, {}, "", {c.items[0].e, Expr{Expr::neg, {}, "", {c.items[1].e}}}};
      Expr dg{Expr::add, {}, "", {g.items[0].e, Expr{Expr::neg, {}, "", {g.items[1].e}}}};
      Expr ndg{Expr::neg, {}, "", {dg}};
      return expr_equal(dc, dg, false, false, o, tol) || expr_equal(dc, ndg, false, false, o, tol);
    }
    return false;
  }
  if (g.kind == K::list || g.kind == K::set)
    return (c.kind == K::list || c.kind == K::set) && unordered_equal(c.items, g.items, o, tol);
  if (g.kind == K::tuple) {
    if (c.kind != K::tuple || c.open != g.open || c.close != g.close ||
        c.items.size() != g.items.size())
      return false;
    for (size_t i = 0; i < g.items.size(); ++i)
      if (!equal(c.items[i], g.items[i], o, tol)) return false;
    return true;
  }
  if (g.kind == K::expr && c.kind == K::expr) {
    if (expr_equal(c.e, g.e, c.percent, g.percent, o, tol)) return true;
    if (!has_vars(g.e) && has_vars(c.e))
      if (auto p = numeric_prefix(c.tokens))
        return expr_equal(*p, g.e, c.percent, g.percent, o, tol);
    return false;
  }
  return false;
}

std::string digits_of(const std::string& s) {
  std::string d;
  for (char ch : s)
    if (std::isdigit(static_cast<unsigned char>(ch))) d += ch;
  return d;
}

/// Splits s at top-level occurrences of `sep` (brackets and braces counted).
std::vector<std::string> split_top(const std::string& s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == '\\' && i + 1 < s.size()) {
      ++i;
      continue;
    }
    if (ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == ']' || ch == '}') --depth;
    if (ch == sep && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

}  // namespace

const char* parse_status_name(ParseStatus s) {
  switch (s) {
    case ParseStatus::ok:
      return "ok";
    case ParseStatus::unparsed:
      return "unparsed";
    case ParseStatus::no_answer:
      return "no_answer";
  }
  return "?";
}

bool math_equal(const std::string& candidate, const std::string& gold, const MathOptions& o,
                ParseStatus* status) {
  if (status) *status = ParseStatus::ok;
  if (candidate.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (status) *status = ParseStatus::no_answer;
    return false;
  }
  if (o.digits_only) {
    const std::string d = digits_of(candidate);
    return !d.empty() && d == digits_of(gold);
  }
  const Normalized nc = normalize_answer(candidate), ng = normalize_answer(gold);
  const Answer c = parse_answer(candidate, nc), g = parse_answer(gold, ng);
  if (status && c.kind == Answer::text && g.kind != Answer::text) *status = ParseStatus::unparsed;
  if (canonical_text(nc.text) == canonical_text(ng.text) && nc.had_percent == ng.had_percent) {
    if (status) *status = ParseStatus::ok;
    return true;
  }
  // A multiple-choice gold: the candidate may add the option's text, "(C) 12".
  if (g.kind == Answer::choice) {
    static const std::regex lead(R"(^\(?([A-E])\)?(?:[\s.:].*)?$)");
    std::smatch m;
    if (std::regex_match(nc.text, m, lead)) return m[1].str() == g.str;
  }
  return equal(c, g, o, o.abs_tolerance);
}

bool parts_equal(const std::string& candidate, const std::vector<std::string>& gold, bool ordered,
                 const std::vector<double>& tolerance, const MathOptions& o, ParseStatus* status) {
  MathOptions opt = o;
  for (double t : tolerance) opt.abs_tolerance = std::max(opt.abs_tolerance, t);
  if (gold.size() == 1) return math_equal(candidate, gold[0], opt, status);
  if (!ordered) {
    std::string all;
    for (const auto& g : gold) all += (all.empty() ? "" : ", ") + g;
    return math_equal(candidate, all, opt, status);
  }
  if (status) *status = ParseStatus::ok;
  if (candidate.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (status) *status = ParseStatus::no_answer;
    return false;
  }
  std::vector<std::string> items = split_top(candidate, ';');
  if (items.size() != gold.size()) items = split_top(candidate, ',');
  if (items.size() != gold.size()) {
    if (status) *status = ParseStatus::unparsed;
    return false;
  }
  bool all = true;
  for (size_t i = 0; i < gold.size(); ++i) {
    ParseStatus s = ParseStatus::ok;
    if (!math_equal(items[i], gold[i], opt, &s)) all = false;
    if (status && s != ParseStatus::ok) *status = ParseStatus::unparsed;
  }
  return all;
}

}  // namespace hogwild::eval
