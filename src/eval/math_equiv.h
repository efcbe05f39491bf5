// Equivalence of math answers (`hogwild eval` scoring of math and physics datasets).
//
// An answer is cleaned (latex.h normalize_answer), then read as one of:
//   choice     a multiple-choice letter A-E: "C", "(C)", "\text{(C)}"
//   list       items separated at the top level by ",", ";", "and", "or" (unordered: the
//              solutions "1, -2" == "-2, 1"); "a \pm b" is the list a + b, a - b
//   tuple      ( .. , .. ) or [ .. , .. ] with >= 2 items (ordered; brackets must match, so the
//              interval [1, 2) != (1, 2)); "\{ .. \}" is a set (unordered); unions of intervals
//              with \cup compare as lists of intervals; \begin{pmatrix} rows \end{pmatrix} is a
//              tuple of row tuples
//   relation   lhs = rhs (also < > \le \ge \ne): "x = 5" equals "5" when lhs is one variable
//   expression numbers and formulas (math_expr.h), units as trailing words dropped: "10 inches"
//   text       anything else, compared after lower-casing and collapsing whitespace
// Two expressions are equal when they evaluate equal: exactly when both are rational
// (1/2004! != 1/2006!, 0.5 == \frac12, 50 != 0.5), within 1e-12 relative otherwise
// (\frac{\sqrt3}{2} == \frac{1}{2}\sqrt{3}); with free variables, at three fixed rational points
// (numeric identity test: x^2-1 == (x-1)(x+1)). A gold without variables and a candidate with
// trailing unit letters ("19.3 W", "2.0 \times 10^{9} Hz") compare on the numeric prefix.
// Lenient options (off by default): a relative tolerance for numbers, percent as x/100.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hogwild::eval {

struct MathOptions {
  double rel_tolerance = 0;  ///< > 0: numbers within this relative difference are equal (lenient)
  double abs_tolerance = 0;  ///< > 0: numbers within this absolute difference (physics "error")
  bool percent_scaled = false;  ///< lenient: "50\%" also equals 0.5
  bool digits_only = false;     ///< --compat paper on LIMO: compare the digit characters only
};

enum class ParseStatus {
  ok,         ///< the candidate was read (as math or text)
  unparsed,   ///< the candidate could not be read as math and is not the gold's text
  no_answer,  ///< no answer was extracted at all
};

const char* parse_status_name(ParseStatus s);

/// True when candidate and gold are equivalent (rules above). *status (optional) tells whether the
/// candidate could be read.
bool math_equal(const std::string& candidate, const std::string& gold, const MathOptions& o = {},
                ParseStatus* status = nullptr);

/// Several gold parts (Problem::gold): the candidate must give all of them; `ordered` for gsm8k5
/// (split at ";" — or at "," when that gives exactly gold.size() items), unordered otherwise
/// (OlympiadBench multiple answers). tolerance: one per part (physics), may be empty.
bool parts_equal(const std::string& candidate, const std::vector<std::string>& gold, bool ordered,
                 const std::vector<double>& tolerance, const MathOptions& o,
                 ParseStatus* status = nullptr);

}  // namespace hogwild::eval
