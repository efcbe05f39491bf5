// Answer clean-up and tokens; the rules are listed in latex.h.
#include "eval/latex.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <regex>

#include "hogwild/answer.h"

namespace hogwild::eval {
namespace {

// replace_all and replace_command are noipa: specialised for a constant replacement (as the
// normalisation steps below call them), std::string::replace trips GCC 12's false -Wrestrict
// (GCC PR 105329). Neither is on a hot path.
[[gnu::noipa]] void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

/// Replaces the command `cmd` (e.g. "\left") only where no letter follows it (so \leftarrow and
/// \le stay when removing \left / \l...).
[[gnu::noipa]] void replace_command(std::string& s, std::string_view cmd, std::string_view to) {
  for (size_t p = s.find(cmd); p != std::string::npos;) {
    size_t end = p + cmd.size();
    if (end < s.size() && std::isalpha(static_cast<unsigned char>(s[end]))) {
      p = s.find(cmd, end);
      continue;
    }
    s.replace(p, cmd.size(), to);
    p = s.find(cmd, p + to.size());
  }
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

/// Offset of the "}" that closes the group opened at s[open] == '{', or npos.
size_t group_end(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '{') {
      ++depth;
    } else if (s[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

/// \cmd{X} -> " X " (for text-like wrappers) or "X" (for math-style wrappers).
void unwrap(std::string& s, std::string_view cmd, bool pad) {
  for (size_t p = s.find(cmd); p != std::string::npos; p = s.find(cmd, p)) {
    size_t open = p + cmd.size();
    while (open < s.size() && s[open] == ' ') ++open;
    if (open >= s.size() || s[open] != '{') {
      p += cmd.size();
      continue;
    }
    size_t close = group_end(s, open);
    if (close == std::string::npos) break;
    std::string inner = s.substr(open + 1, close - open - 1);
    s.replace(p, close - p + 1, pad ? " " + inner + " " : inner);
  }
}

/// Removes the commas of digit groups 1,234,567 outside brackets.
std::string drop_thousands_commas(const std::string& s) {
  static const std::regex grouped(R"((^|[^\d.,])(\d{1,3}(?:,\d{3})+)(?![\d,]))");
  int depth = 0;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
  }
  if (depth > 0 && s.find(',') != std::string::npos) {
    // inside brackets a comma separates items: "(1,234)" is a pair
    bool all_inside = false;
    int d = 0;
    for (char c : s) {
      if (c == '(' || c == '[') ++d;
      if (c == ')' || c == ']') --d;
      if (c == ',' && d > 0) all_inside = true;
    }
    if (all_inside) return s;
  }
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), grouped);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    size_t numpos = static_cast<size_t>(m.position(2));
    out += s.substr(last, numpos - last);
    std::string n = m[2].str();
    n.erase(std::remove(n.begin(), n.end(), ','), n.end());
    out += n;
    last = numpos + m[2].length();
  }
  out += s.substr(last);
  return out;
}

}  // namespace

bool looks_like_word(std::string_view run) {
  if (run.size() < 3) return false;
  bool vowel = false;
  for (size_t i = 0; i < run.size(); ++i) {
    char c = run[i];
    if (i > 0 && std::isupper(static_cast<unsigned char>(c))) return false;  // qcR, nRT: products
    vowel = vowel || std::strchr("aeiouAEIOU", c) != nullptr;
  }
  return vowel;
}

namespace {

/// Unwraps up to three nested \boxed{...} / \fbox{...} around (or inside) the answer in `s`.
void unwrap_boxes(std::string& s) {
  for (int i = 0;
       i < 3 && (s.find("\\boxed") != std::string::npos || s.find("\\fbox") != std::string::npos);
       ++i) {
    if (auto b = extract_boxed(s))
      s = *b;
    else
      break;
  }
}

/// Rewrites the Unicode math symbols models write (−, ×, π, √, ≤, ∈, no-break spaces, ...) in `s`
/// as their LaTeX commands or ASCII.
void unicode_to_latex(std::string& s) {
  static const std::array<std::pair<const char*, const char*>, 18> uni = {{{"−", "-"},
                                                                           {"–", "-"},
                                                                           {"×", "\\times "},
                                                                           {"·", "\\cdot "},
                                                                           {"÷", "\\div "},
                                                                           {"π", "\\pi "},
                                                                           {"∞", "\\infty "},
                                                                           {"√", "\\sqrt"},
                                                                           {"°", "^\\circ"},
                                                                           {"≤", "\\le "},
                                                                           {"≥", "\\ge "},
                                                                           {"≠", "\\ne "},
                                                                           {"∪", "\\cup "},
                                                                           {"±", "\\pm "},
                                                                           {"\u00a0", " "},
                                                                           {"\u2009", " "},
                                                                           {"’", "'"},
                                                                           {"∈", "\\in "}}};
  for (auto [from, to] : uni) replace_all(s, from, to);
}

/// Removes from `s` the math delimiters (\( \) \[ \] $) and the LaTeX-spaced thousands
/// separators (1{,}000, 1\,000), and turns matrix row breaks (\\) into \cr.
void drop_delimiters(std::string& s) {
  // Matrix row breaks before the spacing commands (whose "\\ " would eat one backslash).
  replace_all(s, "\\\\", " \\cr ");
  // Math delimiters.
  replace_all(s, "\\(", " ");
  replace_all(s, "\\)", " ");
  replace_all(s, "\\[", " ");
  replace_all(s, "\\]", " ");
  replace_all(s, "\\$", "");
  replace_all(s, "$", "");
  // Thousands separators written with LaTeX spacing: 1{,}000 and 1\,000.
  static const std::regex brace_comma(R"((\d)\{,\}(\d\d\d))"), thin(R"((\d)\\,(\d\d\d))");
  for (int i = 0; i < 3; ++i) {
    s = std::regex_replace(s, brace_comma, "$1$2");
    s = std::regex_replace(s, thin, "$1$2");
  }
}

/// Canonical commands in `s`: spacing and sizing commands become spaces, \dfrac/\tfrac ->
/// \frac, \dbinom/\tbinom -> \binom, \leq/\geq/\neq (and slanted forms) -> \le/\ge/\ne,
/// \lt/\gt -> </>, and the text and font wrappers are unwrapped (text-like ones keep word
/// boundaries).
void canonical_commands(std::string& s) {
  // Spacing and sizing.
  for (const char* sp : {"\\qquad", "\\quad", "\\displaystyle", "\\left", "\\right", "\\bigl",
                         "\\bigr", "\\Bigl", "\\Bigr", "\\big", "\\Big"})
    replace_command(s, sp, " ");
  for (const char* sp : {"\\,", "\\;", "\\:", "\\!", "\\ ", "~"}) replace_all(s, sp, " ");
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\tfrac", "\\frac");
  replace_all(s, "\\dbinom", "\\binom");
  replace_all(s, "\\tbinom", "\\binom");
  replace_command(s, "\\leq", "\\le ");
  replace_command(s, "\\geq", "\\ge ");
  replace_command(s, "\\neq", "\\ne ");
  replace_command(s, "\\leqslant", "\\le ");
  replace_command(s, "\\geqslant", "\\ge ");
  replace_command(s, "\\lt", "<");
  replace_command(s, "\\gt", ">");
  // Wrappers: text-like ones keep word boundaries.
  for (const char* w : {"\\text", "\\textbf", "\\textit", "\\textrm", "\\mbox"}) unwrap(s, w, true);
  for (const char* w :
       {"\\mathrm", "\\mathbf", "\\mathit", "\\boldsymbol", "\\operatorname", "\\mathsf"})
    unwrap(s, w, false);
}

}  // namespace

Normalized normalize_answer(std::string_view answer) {
  Normalized r;
  std::string s = trim(std::string(answer));
  unwrap_boxes(s);
  unicode_to_latex(s);
  drop_delimiters(s);
  // Percent, degrees.
  if (s.find('%') != std::string::npos) r.had_percent = true;
  replace_all(s, "\\%", "");
  replace_all(s, "%", "");
  for (const char* deg : {"^{\\circ}", "^\\circ", "^{\\degree}", "\\degree", "\\circ"})
    replace_all(s, deg, " ");
  canonical_commands(s);
  s = trim(s);
  // "x \in [-2,7]": the set is the answer.
  static const std::regex member(R"(^[A-Za-z]\s*\\in\s+)");
  s = std::regex_replace(s, member, "");
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  s = drop_thousands_commas(trim(s));
  r.text = s;
  return r;
}

bool is_unit_word(std::string_view w) {
  static const char* units[] = {
      "cm",     "mm",      "km",    "kg",    "mg",     "ft",      "yd",      "mi",
      "inch",   "inches",  "feet",  "foot",  "meter",  "meters",  "metre",   "metres",
      "mile",   "miles",   "mph",   "kmh",   "hour",   "hours",   "hr",      "hrs",
      "minute", "minutes", "min",   "mins",  "second", "seconds", "sec",     "secs",
      "day",    "days",    "week",  "weeks", "month",  "months",  "year",    "years",
      "dollar", "dollars", "cent",  "cents", "degree", "degrees", "unit",    "units",
      "sq",     "square",  "cubic", "ml",    "mL",     "liter",   "liters",  "litre",
      "gallon", "gallons", "lb",    "lbs",   "pound",  "pounds",  "oz",      "ounce",
      "ounces", "eV",      "keV",   "MeV",   "GeV",    "Hz",      "kHz",     "MHz",
      "GHz",    "kJ",      "kW",    "MW",    "Pa",     "kPa",     "atm",     "mol",
      "mA",     "cal",     "kcal",  "rad",   "sr",     "nm",      "um",      "ms",
      "ns",     "ps",      "mV",    "kV",    "mT",     "mph",     "percent", "points"};
  for (const char* u : units)
    if (w == u) return true;
  return false;
}

std::vector<Token> tokenize(std::string_view s) {
  static const char* funcs[] = {"sin",    "cos",    "tan",  "cot",  "sec", "csc",
                                "ln",     "log",    "exp",  "sqrt", "pi",  "arcsin",
                                "arccos", "arctan", "sinh", "cosh", "tanh"};
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isdigit(c) || (c == '.' && i + 1 < s.size() &&
                                   std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      out.push_back({Token::number, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isalpha(c)) {
      size_t j = i;
      while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
      std::string_view run = s.substr(i, j - i);
      bool func = false;
      for (const char* f : funcs) func = func || run == f;
      if (func) {
        out.push_back({Token::command, "\\" + std::string(run)});
      } else if (is_unit_word(run) || looks_like_word(run)) {
        out.push_back({Token::word, std::string(run)});
      } else {
        for (char l : run) out.push_back({Token::letter, std::string(1, l)});
      }
      i = j;
    } else if (c == '\\') {
      size_t j = i + 1;
      while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
      if (j == i + 1) {  // \{ \} \\ and other escaped symbols
        j = std::min(s.size(), i + 2);
        out.push_back({Token::symbol, std::string(s.substr(i, j - i))});
      } else {
        out.push_back({Token::command, std::string(s.substr(i, j - i))});
      }
      i = j;
    } else {
      out.push_back({Token::symbol, std::string(1, static_cast<char>(c))});
      ++i;
    }
  }
  return out;
}

}  // namespace hogwild::eval
