// Statement tests and their runs; the formats are described in code_tests.h.
#include "eval/code_tests.h"

#include <fmt/format.h>
#include <gmpxx.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>

namespace hogwild::eval {
namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
  return lines;
}

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

/// Lines with trailing spaces removed and trailing blank lines dropped.
std::vector<std::string> norm_lines(const std::string& s) {
  std::vector<std::string> v;
  for (auto& l : split_lines(s)) v.push_back(rstrip(l));
  while (!v.empty() && v.back().empty()) v.pop_back();
  return v;
}

/// Exact value of a decimal token ("-1.50", "3", "2e3"); false when it is not a number.
bool decimal_value(const std::string& t, mpq_class& out) {
  static const std::regex num(R"(([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,6}))?)");
  std::smatch m;
  if (!std::regex_match(t, m, num) || (m[2].length() == 0 && m[3].length() == 0)) return false;
  std::string digits = m[2].str() + m[3].str();
  mpz_class mant(digits.empty() ? "0" : digits, 10);
  long exp10 = (m[4].matched ? std::stol(m[4].str()) : 0) - static_cast<long>(m[3].length());
  mpz_class p;
  mpz_ui_pow_ui(p.get_mpz_t(), 10, static_cast<unsigned long>(std::labs(exp10)));
  out = exp10 >= 0 ? mpq_class(mant * p) : mpq_class(mant, p);
  out.canonicalize();
  if (m[1] == "-") out = -out;
  return true;
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> t;
  std::stringstream ss(line);
  std::string w;
  while (ss >> w) t.push_back(w);
  return t;
}

/// Lines from `i` up to the next blank line, or up to a line equal to `stop`.
std::string block(const std::vector<std::string>& lines, size_t i, const std::string& stop) {
  while (i < lines.size() && blank(lines[i])) ++i;
  std::vector<std::string> out;
  for (; i < lines.size(); ++i) {
    if (!stop.empty() ? rstrip(lines[i]) == stop : blank(lines[i])) break;
    out.push_back(lines[i]);
  }
  if (!stop.empty())
    while (!out.empty() && blank(out.back())) out.pop_back();
  std::string s;
  for (auto& l : out) s += l + "\n";
  return s;
}

const char* kPrelude =
    "import sys, math, itertools, functools, collections, heapq, bisect, string, re\n"
    "from typing import *\n"
    "from collections import *\n"
    "from itertools import *\n"
    "from functools import *\n"
    "from heapq import *\n"
    "from bisect import *\n"
    "from math import *\n";

// Calls Solution().<method>(**args) and prints "<nonce> PASS" or "<nonce> FAIL <repr>" on its
// own line; the nonce (fresh per run) keeps the program from faking the verdict.
const char* kCallDriver = R"PY(

def _hogwild_main():
    import sys as _s, json as _j
    _d = _j.loads(_s.stdin.read())
    _ns = {"true": True, "false": False, "null": None}
    _args = eval("dict(" + _d["args"] + ")", _ns)
    _expected = eval(_d["expected"], _ns)
    _got = getattr(Solution(), _d["method"])(**_args)
    def _same(a, b):
        if isinstance(a, float) or isinstance(b, float):
            try:
                return abs(float(a) - float(b)) <= 1e-5 * max(1.0, abs(float(b)))
            except Exception:
                return False
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        return a == b
    _v = " PASS" if _same(_got, _expected) else " FAIL " + repr(_got)[:200]
    _s.stdout.write("\n" + _d["nonce"] + _v + "\n")
    _s.stdout.flush()

_hogwild_main()
)PY";

std::string excerpt(const std::string& s, size_t n = 200) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace

std::vector<CodeTest> statement_tests(const std::string& statement, std::string* method) {
  std::vector<CodeTest> tests;
  method->clear();
  const std::vector<std::string> lines = split_lines(statement);
  static const std::regex def(R"(^\s*def (\w+)\(self)");
  static const std::regex sample_in(R"(^Sample Input (\d+)\s*$)");
  bool call = statement.find("class Solution") != std::string::npos;
  if (call) {
    std::smatch m;
    for (auto& l : lines)
      if (std::regex_search(l, m, def)) *method = m[1].str();
    if (method->empty()) return tests;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].starts_with("Input: ")) continue;
      CodeTest t{rstrip(lines[i].substr(7)), ""};
      for (size_t j = i + 1; j < lines.size(); ++j)
        if (lines[j].starts_with("Output: ")) {
          t.output = rstrip(lines[j].substr(8));
          break;
        }
      if (!t.output.empty()) tests.push_back(t);
    }
    return tests;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, sample_in)) continue;
    const std::string out_header = "Sample Output " + m[1].str();
    CodeTest t;
    t.input = block(lines, i + 1, out_header);
    size_t j = i + 1;
    while (j < lines.size() && rstrip(lines[j]) != out_header) ++j;
    if (j == lines.size()) continue;
    t.output = block(lines, j + 1, "");
    tests.push_back(t);
  }
  return tests;
}

bool outputs_match(const std::string& got, const std::string& expected) {
  const auto a = norm_lines(got), b = norm_lines(expected);
  if (a == b) return true;
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto ta = tokens(a[i]), tb = tokens(b[i]);
    if (ta.size() != tb.size()) return false;
    for (size_t k = 0; k < ta.size(); ++k) {
      if (ta[k] == tb[k]) continue;
      mpq_class x, y;
      if (!decimal_value(ta[k], x) || !decimal_value(tb[k], y) || x != y) return false;
    }
  }
  return true;
}

CodeVerdict run_code_tests(const Sandbox& box, const Problem& p, const std::string& code) {
  CodeVerdict v;
  v.tests = static_cast<int>(p.tests.size());
  if (p.tests.empty()) {
    v.status = "no_tests";
    return v;
  }
  static std::mt19937_64 rng{std::random_device{}()};
  for (size_t i = 0; i < p.tests.size(); ++i) {
    const CodeTest& t = p.tests[i];
    SandboxResult r;
    bool ok = false;
    std::string got;
    if (p.method.empty()) {
      r = box.run_python(code, t.input);
      got = r.out;
      ok = r.status() == "ok" && outputs_match(r.out, t.output);
    } else {
      const std::string nonce = fmt::format("hogwild-{:016x}", rng());
      nlohmann::json in = {
          {"args", t.input}, {"expected", t.output}, {"method", p.method}, {"nonce", nonce}};
      r = box.run_python(std::string(kPrelude) + code + kCallDriver, in.dump());
      size_t at = r.out.rfind("\n" + nonce + " ");
      got = at == std::string::npos ? r.out : r.out.substr(at + nonce.size() + 2);
      ok = r.status() == "ok" && at != std::string::npos && got.starts_with("PASS");
    }
    if (ok) {
      ++v.tests_passed;
      continue;
    }
    const std::string st = r.status();
    v.status = st == "ok"             ? "wrong_answer"
               : st == "timeout"      ? "timeout"
               : st == "output_limit" ? "output_limit"
                                      : "runtime_error";
    v.detail = fmt::format(
        "test {}: {}; expected {:?}, got {:?}{}", i + 1, st, excerpt(t.output), excerpt(got),
        r.err.empty()
            ? ""
            : "; stderr: " + excerpt(r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0)));
    return v;
  }
  v.passed = true;
  v.status = "passed";
  return v;
}

}  // namespace hogwild::eval
