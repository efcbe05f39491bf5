// LiveCodeBench scoring offline: the tests written in a problem statement, and a candidate program
// run against them in the sandbox (sandbox.h). The hidden tests of LiveCodeBench are not
// available offline (livecodebench/SOURCE.md), so a "correct" here means "passes the statement's
// examples"; docs/EVAL.md and the summary say so.
//
// Statement formats (livecodebench_v5.jsonl):
//   stdin/stdout (AtCoder): "Sample Input k" <blank> input lines <blank> "Sample Output k"
//     <blank> output lines, up to the next blank line.
//   call (LeetCode): "Example k:" ... "Input: a = 1, b = [2,3]" / "Output: 5" and the starter
//     code's "def method(self, ...)"; the program's Solution().method(a=1, b=[2,3]) must return a
//     value equal to the output (Python literals; true/false/null read as True/False/None).
#pragma once

#include <string>
#include <vector>

#include "eval/dataset.h"
#include "eval/sandbox.h"

namespace hogwild::eval {

/// The tests in a statement; *method = the Solution method for call tests ("" for stdin tests).
/// Empty when the statement has none.
std::vector<CodeTest> statement_tests(const std::string& statement, std::string* method);

/// stdout comparison: equal line by line (trailing spaces of each line and trailing blank lines
/// ignored); else equal token by token where every differing token pair are numbers of equal
/// exact decimal value ("1.50" == "1.5", "2" == "2.0"; no tolerance).
bool outputs_match(const std::string& got, const std::string& expected);

/// The outcome of one candidate against a problem's tests.
struct CodeVerdict {
  bool passed = false;  ///< every test passed (false when there are no tests)
  int tests = 0, tests_passed = 0;
  std::string status;  ///< "passed", "wrong_answer", "timeout", "runtime_error", "no_tests", ...
  std::string detail;  ///< first failure: test index, expected/got excerpts, stderr tail
};

/// Runs `code` against p.tests (stdin or call tests) in `box`; stops at the first failure.
CodeVerdict run_code_tests(const Sandbox& box, const Problem& p, const std::string& code);

}  // namespace hogwild::eval
