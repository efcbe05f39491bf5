// Countdown, the second task of the collaboration model: reach a target from a few numbers with
// + - * /. Unlike a pack (problems.h), the work is not split in advance: the workers split a
// search (countdown_oracle.h).
//
// The rules (those of the Countdown task of "Learning Adaptive Parallel Reasoning", Pan et al.
// 2025): each given number is used at most once (numbers not used are allowed); every operation
// gives a positive whole number, so a subtraction takes the smaller number from the larger one
// and a division is allowed only when it leaves no remainder.
//
// Problems: n = 3..6 numbers in 1..25 and a target in 10..200 made by combining all n numbers in
// a random order with random operations; the target is never one of the numbers. Solvable by
// construction (the combination is kept as the known solution). Splits: train and test, in
// separate seed spaces (test-frames, a held-out wording of packs, has no meaning here).
//
// The search (the same for one worker and for teams): a branch is a first pair of numbers, by
// position, in the order (1, 2), (1, 3), ..., (1, n), (2, 3), ...; inside a branch, depth first:
// the pair's operations in the order + - * /, then each resulting list of numbers in turn (the
// remaining numbers in their order, the new number last), its pairs and operations in the same
// order. One line per tried combination:
//   " 25+7=32, left 3 8 32."                       a move that leaves three or more numbers
//   " 32*3=96, then 96+8=104, 96-8=88, 96*8=768, 96/8=12."
//                                                  a move that leaves two numbers, with the
//                                                  operations of the last pair
//   "... Found: (25+7)*3-8 = 88."                  the line that reaches the target ends here
// Moves that break the rules, and the useless ones (times 1, divided by 1), are never written.
// The search is complete: it finds a solution of every solvable problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collab/problems.h"

namespace hogwild::collab {

/// A Countdown problem.
struct Countdown {
  std::vector<int64_t> numbers;  // the given numbers, in the order of the text (3..6 of them)
  int64_t target = 0;            // 10..200, not one of the numbers
  std::string solution;          // an expression that uses every number once and equals target
  std::string text;              // the problem as the workers see it (last line kCountdownQuestion)
};

/// The last line of every Countdown problem's text.
inline constexpr std::string_view kCountdownQuestion =
    "Which expression of these numbers gives the target?";

/// The problem for (split, n_numbers, seed): deterministic on every platform (Rng of problems.h,
/// no <random> distributions). Throws hogwild::Error unless 3 <= n_numbers <= 6, or for the split
/// test-frames (packs only).
Countdown make_countdown(Split split, int n_numbers, uint64_t seed);

/// The result of checking an answer.
struct CountdownCheck {
  bool ok = false;
  int64_t value = 0;  // the expression's value when it could be evaluated
  std::string error;  // why it is not a solution ("" when ok)
};

/// Checks an answer expression against a problem: integers, + - * / (also \times, \cdot, \div),
/// parentheses and spaces, optionally followed by "= N" (N must be the target); every number must
/// be one of `numbers`, each used at most as often as it is given; every operation must give a
/// positive whole number (exact division); the value must equal `target`. Never throws: any
/// input (up to 1000 bytes, parentheses nested up to 64 deep, values up to 10^15) gives ok or an
/// error message.
CountdownCheck check_countdown(std::string_view answer, const std::vector<int64_t>& numbers,
                               int64_t target);

/// The operation a op b under the rules, op one of + - * /; a and b as written (the search writes
/// the larger first for - and /). Returns false when it breaks a rule (not positive, not whole) or
/// is useless (a * 1, 1 * b, a / 1); *out = the value otherwise.
bool countdown_op(int64_t a, char op, int64_t b, int64_t* out);

/// The branches of a search over n numbers: pairs of positions (0-based, i < j) in branch order.
std::vector<std::pair<int, int>> countdown_branches(int n);

/// One line of the search.
struct SearchLine {
  std::string text;        // " 25+7=32, left 3 8 32." (leading space, no separator)
  bool found = false;      // the line reaches the target (it ends with " Found: EXPR = TARGET.")
  std::string expression;  // found: the solution it found
};

/// The lines of branch `branch` (1-based) of the search, in order, up to the first line that
/// reaches the target. Throws hogwild::Error for a branch out of range.
std::vector<SearchLine> branch_lines(const Countdown& problem, int branch);

}  // namespace hogwild::collab
