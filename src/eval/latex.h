// Text-level clean-up of a math answer and its tokens (the first stage of math_equiv.h).
//
// normalize_answer() rewrites spellings that mean the same into one form, without changing what
// the answer says:
//   - math delimiters $..$, \(..\), \[..\] and a surrounding \boxed{} / \fbox{} are removed;
//   - unicode − – × · ÷ π ∞ √ ° ≤ ≥ ≠ ∪ ± become their LaTeX commands or ASCII;
//   - spacing (\, \; \: \! \quad \qquad ~ "\ "), sizing (\left \right \big ...), \displaystyle
//     are dropped; \dfrac \tfrac -> \frac; \dbinom \tbinom -> \binom; \leq \geq \neq -> \le \ge
//     \ne; \lt \gt -> < >;
//   - thousands separators: 1,234,567 (groups of exactly three digits, no space after the
//     comma, not inside brackets), 1{,}234 and 1\,234 become 1234;
//   - degrees ^\circ ^{\circ} \circ \degree, percent \% %, dollar signs \$ are removed (a percent
//     is recorded: `had_percent`), so 50\% == 50 and 30^\circ == 30, but 50 != 0.5;
//   - \text{..} \textbf{..} \textit{..} \mbox{..} \mathrm{..} \mathbf{..} \operatorname{..}
//     are unwrapped to their content (units then become trailing words, math_equiv.h);
//   - a trailing "." is dropped, surrounding whitespace trimmed.
// Words are never deleted: "3 and 4" stays a list of two answers, not 34.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild::eval {

struct Normalized {
  std::string text;
  bool had_percent = false;
};

Normalized normalize_answer(std::string_view answer);

/// A token of a normalized answer.
struct Token {
  enum Kind {
    number,   ///< 12, 3.5, .5
    letter,   ///< one ASCII letter (a variable)
    word,     ///< looks_like_word() or is_unit_word(): text, not a product of variables
    command,  ///< \frac, \pi, \sin (also sin/cos/log/ln/exp/sqrt/pi written without backslash)
    symbol,   ///< one character, or \{ \}; a matrix row break \\ is the command \cr
  } kind;
  std::string text;
};

/// Tokens of a normalized answer; whitespace separates tokens and is dropped. Non-ASCII bytes
/// come out as symbols (which the parser rejects, so such an answer is compared as text).
std::vector<Token> tokenize(std::string_view normalized);

/// True for a run of >= 3 letters with a vowel and no capital after the first letter ("Evelyn",
/// "odd", "inches"); other runs ("qcR", "nRT", "xyz") are products of one-letter variables.
bool looks_like_word(std::string_view letters);

/// True for run-together letters that name a unit ("cm", "kg", "MeV", "mph", ...; case kept).
bool is_unit_word(std::string_view letters);

}  // namespace hogwild::eval
