// Countdown problems, the answer checker and the search's lines (countdown.h).
#include "collab/countdown.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"

namespace hogwild::collab {

namespace {

constexpr std::string_view kOps = "+-*/";
constexpr int64_t kMaxValue = 1000000000000000;  // 10^15: larger values are refused

// A number of a search state or of the generator's expression: its value, the expression that
// makes it and the precedence of that expression's last operation (3: a plain number, 2: * or
// /, 1: + or -).
struct Node {
  int64_t value;
  std::string text;
  int prec;
};

Node leaf(int64_t v) { return {v, std::to_string(v), 3}; }

// l op r with the fewest parentheses that keep the order of operations (and so the rules: a
// dropped pair of parentheses never changes the value, and a + (b - c) = a + b - c, a * (b / c)
// = a * b / c keep every intermediate positive and whole).
Node combine(const Node& l, char op, const Node& r, int64_t value) {
  auto wrap = [](const Node& n, bool need) { return need ? "(" + n.text + ")" : n.text; };
  std::string t;
  switch (op) {
    case '+':
      t = l.text + "+" + r.text;
      break;
    case '-':
      t = l.text + "-" + wrap(r, r.prec == 1);
      break;
    case '*':
      t = wrap(l, l.prec == 1) + "*" + wrap(r, r.prec == 1);
      break;
    default:
      t = wrap(l, l.prec == 1) + "/" + wrap(r, r.prec <= 2);
      break;
  }
  return {value, t, op == '+' || op == '-' ? 1 : 2};
}

// Applies op to the pair (x, y) in the search's order: the larger number first for - and /.
bool apply(const Node& x, char op, const Node& y, Node* out) {
  const bool swap = (op == '-' || op == '/') && y.value > x.value;
  const Node& a = swap ? y : x;
  const Node& b = swap ? x : y;
  int64_t v = 0;
  if (!countdown_op(a.value, op, b.value, &v)) return false;
  *out = combine(a, op, b, v);
  return true;
}

std::string equation(const Node& x, char op, const Node& y, int64_t v) {
  const bool swap = (op == '-' || op == '/') && y.value > x.value;
  return fmt::format("{}{}{}={}", swap ? y.value : x.value, op, swap ? x.value : y.value, v);
}

// The depth-first search below a state; appends lines; true once a line reached the target.
bool search(const std::vector<Node>& state, int64_t target, std::vector<SearchLine>& lines,
            int only_i = -1, int only_j = -1) {
  const int m = static_cast<int>(state.size());
  for (int i = 0; i < m; ++i) {
    for (int j = i + 1; j < m; ++j) {
      if (only_i >= 0 && (i != only_i || j != only_j)) continue;
      for (char op : kOps) {
        Node r;
        if (!apply(state[i], op, state[j], &r)) continue;
        std::vector<Node> next;
        for (int k = 0; k < m; ++k)
          if (k != i && k != j) next.push_back(state[k]);
        next.push_back(r);
        SearchLine line;
        line.text = fmt::format(" {}", equation(state[i], op, state[j], r.value));
        auto found = [&](const Node& n) {
          line.found = true;
          line.expression = n.text;
          line.text += fmt::format(". Found: {} = {}.", n.text, target);
          lines.push_back(line);
          return true;
        };
        if (r.value == target) return found(r);
        if (next.size() == 2) {
          // The last pair: its operations on this line.
          line.text += ", then";
          bool first = true;
          for (char op2 : kOps) {
            Node z;
            if (!apply(next[0], op2, next[1], &z)) continue;
            line.text += first ? " " : ", ";
            line.text += equation(next[0], op2, next[1], z.value);
            first = false;
            if (z.value == target) return found(z);
          }
          if (first) line.text += " nothing";
          line.text += ".";
          lines.push_back(line);
          continue;
        }
        if (next.size() >= 3) {
          line.text += ", left";
          for (const Node& n : next) line.text += fmt::format(" {}", n.value);
          line.text += ".";
        } else {
          line.text += ".";
        }
        lines.push_back(line);
        if (next.size() >= 3 && search(next, target, lines)) return true;
      }
    }
  }
  return false;
}

// ---- The checker: a recursive-descent parser that evaluates as it reads.

struct Parser {
  std::string_view s;
  size_t pos = 0;
  int depth = 0;
  std::map<int64_t, int> used;
  std::string error;

  void skip() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool fail_at(std::string msg) {
    if (error.empty()) error = std::move(msg);
    return false;
  }
  // The operator at pos (+ - * / or \times \cdot \div, also the multiplication and division
  // signs in UTF-8), advancing past it; 0 when none.
  char op() {
    skip();
    if (pos >= s.size()) return 0;
    const char c = s[pos];
    if (c == '+' || c == '-' || c == '*' || c == '/') {
      ++pos;
      return c;
    }
    for (auto [word, o] : {std::pair<std::string_view, char>{"\\times", '*'},
                           {"\\cdot", '*'},
                           {"\\div", '/'},
                           {"\xc3\x97", '*'},
                           {"\xc3\xb7", '/'}}) {
      if (s.substr(pos, word.size()) == word) {
        pos += word.size();
        return o;
      }
    }
    return 0;
  }
  bool binary(int64_t a, char o, int64_t b, int64_t* out) {
    switch (o) {
      case '+':
        *out = a + b;
        break;
      case '-':
        if (a - b <= 0)
          return fail_at(
              fmt::format("{} - {} is not positive; every step must give a positive "
                          "whole number",
                          a, b));
        *out = a - b;
        break;
      case '*':
        if (b != 0 && a > kMaxValue / b) return fail_at("a value is too large (over 10^15)");
        *out = a * b;
        if (*out <= 0)
          return fail_at(
              fmt::format("{} * {} is not positive; every step must give a positive "
                          "whole number",
                          a, b));
        break;
      default:
        if (b == 0 || a % b != 0)
          return fail_at(
              fmt::format("{} / {} is not a whole number; divide only when nothing is "
                          "left over",
                          a, b));
        *out = a / b;
        break;
    }
    if (*out > kMaxValue) return fail_at("a value is too large (over 10^15)");
    return true;
  }
  bool factor(int64_t* v) {
    skip();
    if (pos >= s.size()) return fail_at("the expression ends where a number was expected");
    const char c = s[pos];
    if (c == '(') {
      if (++depth > 64) return fail_at("parentheses nested too deep");
      ++pos;
      if (!expr(v)) return false;
      skip();
      if (pos >= s.size() || s[pos] != ')')
        return fail_at(fmt::format("missing ')' at position {}", pos + 1));
      ++pos;
      --depth;
      return true;
    }
    if (c == '-' || c == '+')
      return fail_at(fmt::format("a sign before a number at position {} is not allowed", pos + 1));
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return fail_at(
          fmt::format("unexpected '{}' at position {}; an answer holds numbers, "
                      "+ - * / and parentheses",
                      c, pos + 1));
    const size_t b = pos;
    int64_t x = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (pos - b >= 15) return fail_at("a number is too long");
      x = x * 10 + (s[pos++] - '0');
    }
    if (pos < s.size() && (s[pos] == '.' || s[pos] == ','))
      if (pos + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[pos + 1])))
        return fail_at(fmt::format("only whole numbers are allowed (at position {})", b + 1));
    used[x] += 1;
    *v = x;
    return true;
  }
  bool term(int64_t* v) {
    if (!factor(v)) return false;
    for (;;) {
      const size_t save = pos;
      const char o = op();
      if (o != '*' && o != '/') {
        pos = save;
        return true;
      }
      int64_t r = 0;
      if (!factor(&r) || !binary(*v, o, r, v)) return false;
    }
  }
  bool expr(int64_t* v) {
    if (!term(v)) return false;
    for (;;) {
      const size_t save = pos;
      const char o = op();
      if (o != '+' && o != '-') {
        pos = save;
        return true;
      }
      int64_t r = 0;
      if (!term(&r) || !binary(*v, o, r, v)) return false;
    }
  }
};

}  // namespace

bool countdown_op(int64_t a, char op, int64_t b, int64_t* out) {
  if (a <= 0 || b <= 0) return false;
  switch (op) {
    case '+':
      *out = a + b;
      return true;
    case '-':
      *out = a - b;
      return a > b;
    case '*':
      if (a == 1 || b == 1 || a > kMaxValue / b) return false;
      *out = a * b;
      return true;
    case '/':
      if (b == 1 || a % b != 0) return false;
      *out = a / b;
      return true;
    default:
      return false;
  }
}

std::vector<std::pair<int, int>> countdown_branches(int n) {
  std::vector<std::pair<int, int>> b;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) b.push_back({i, j});
  return b;
}

std::vector<SearchLine> branch_lines(const Countdown& p, int branch) {
  const auto pairs = countdown_branches(static_cast<int>(p.numbers.size()));
  if (branch < 1 || branch > static_cast<int>(pairs.size()))
    fail("branch {} is out of range: {} numbers have branches 1..{}", branch, p.numbers.size(),
         pairs.size());
  std::vector<Node> state;
  for (int64_t v : p.numbers) state.push_back(leaf(v));
  std::vector<SearchLine> lines;
  const auto [i, j] = pairs[branch - 1];
  search(state, p.target, lines, i, j);
  return lines;
}

Countdown make_countdown(Split split, int n, uint64_t seed) {
  if (n < 3 || n > 6) fail("a Countdown problem has 3..6 numbers, got {}", n);
  if (split == Split::test_frames)
    fail("Countdown has the splits train and test (test-frames is a wording of packs)");
  // Seed spaces of their own: neither packs' streams nor the other split's.
  const uint64_t tag = split == Split::train ? 0x6b6b6b6b00000017ull : 0xc3c3c3c3000000e5ull;
  Rng rng(seed * 0x100000001b3ull + tag + static_cast<uint64_t>(n) * 0x7f4aull);
  for (;;) {
    Countdown c;
    std::vector<Node> nodes;
    for (int i = 0; i < n; ++i) {
      c.numbers.push_back(rng.uniform(1, 25));
      nodes.push_back(leaf(c.numbers.back()));
    }
    // Combine two random numbers with a random operation allowed by the rules until one is left.
    bool stuck = false;
    while (nodes.size() > 1 && !stuck) {
      stuck = true;
      for (int attempt = 0; attempt < 8 && stuck; ++attempt) {
        const int m = static_cast<int>(nodes.size());
        const int i = static_cast<int>(rng.uniform(0, m - 1));
        int j = static_cast<int>(rng.uniform(0, m - 2));
        if (j >= i) ++j;
        const int o0 = static_cast<int>(rng.uniform(0, 3));
        for (int k = 0; k < 4 && stuck; ++k) {
          Node r;
          if (!apply(nodes[i], kOps[(o0 + k) % 4], nodes[j], &r)) continue;
          nodes.erase(nodes.begin() + std::max(i, j));
          nodes.erase(nodes.begin() + std::min(i, j));
          nodes.push_back(r);
          stuck = false;
        }
      }
    }
    if (stuck) continue;
    c.target = nodes[0].value;
    if (c.target < 10 || c.target > 200) continue;
    if (std::find(c.numbers.begin(), c.numbers.end(), c.target) != c.numbers.end()) continue;
    c.solution = nodes[0].text;
    std::string list;
    for (int64_t v : c.numbers) list += (list.empty() ? "" : ", ") + std::to_string(v);
    c.text = fmt::format(
        "Numbers: {}\nTarget: {}\nCombine some of the numbers with +, -, * and / to make the "
        "target. Each number may be used once at most; every step must give a positive whole "
        "number, so divide only when nothing is left over.\n{}",
        list, c.target, kCountdownQuestion);
    return c;
  }
}

CountdownCheck check_countdown(std::string_view answer, const std::vector<int64_t>& numbers,
                               int64_t target) {
  CountdownCheck out;
  if (answer.size() > 1000) {
    out.error = "the answer is too long (over 1000 bytes)";
    return out;
  }
  // An optional "= N" at the end.
  std::string_view left = answer;
  const size_t eq = answer.find('=');
  if (eq != std::string_view::npos) {
    left = answer.substr(0, eq);
    std::string_view rhs = answer.substr(eq + 1);
    while (!rhs.empty() && std::isspace(static_cast<unsigned char>(rhs.front())))
      rhs.remove_prefix(1);
    while (!rhs.empty() &&
           (std::isspace(static_cast<unsigned char>(rhs.back())) || rhs.back() == '.'))
      rhs.remove_suffix(1);
    if (rhs != std::to_string(target)) {
      out.error = fmt::format("after '=' the answer must give the target {}", target);
      return out;
    }
  }
  Parser p;
  p.s = left;
  p.skip();
  if (p.pos >= left.size()) {
    out.error = "the answer is empty";
    return out;
  }
  int64_t v = 0;
  if (!p.expr(&v)) {
    out.error = p.error;
    return out;
  }
  p.skip();
  if (p.pos < left.size()) {
    out.error = left[p.pos] == ')'
                    ? fmt::format("unmatched ')' at position {}", p.pos + 1)
                    : fmt::format("unexpected '{}' at position {}", left[p.pos], p.pos + 1);
    return out;
  }
  out.value = v;
  std::map<int64_t, int> given;
  for (int64_t x : numbers) given[x] += 1;
  for (const auto& [x, k] : p.used) {
    const int g = given.count(x) ? given[x] : 0;
    if (g == 0) {
      out.error = fmt::format("{} is not one of the numbers", x);
      return out;
    }
    if (k > g) {
      out.error = g == 1 ? fmt::format("{} is used {} times; it is given once", x, k)
                         : fmt::format("{} is used {} times; it is given {} times", x, k, g);
      return out;
    }
  }
  if (v != target) {
    out.error = fmt::format("the expression gives {}, not the target {}", v, target);
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace hogwild::collab
