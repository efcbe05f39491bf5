// Scoring one extracted answer against a problem (math, physics, code, countdown), for
// `hogwild eval`.
#pragma once

#include <optional>
#include <string>

#include "eval/dataset.h"
#include "eval/math_equiv.h"
#include "eval/sandbox.h"

namespace hogwild::eval {

struct ScoreOptions {
  MathOptions math;                  ///< lenient flags, --compat paper digits-only (LIMO)
  const Sandbox* sandbox = nullptr;  ///< code problems; required for a code dataset
};

struct Score {
  bool correct = false;
  ParseStatus status = ParseStatus::no_answer;
  int tests = 0, tests_passed = 0;  ///< code: the statement's tests
  std::string detail;  ///< code: the verdict ("passed", "wrong_answer", ...) + first failure;
                       ///< countdown: why the expression is not a solution
};

/// Scores `answer` (nullopt = none was extracted) for problem p of kind `kind`: math and physics
/// through parts_equal (physics with the problem's tolerances), code through run_code_tests,
/// countdown through collab::check_countdown (detail: its error, or "reaches the target"; status
/// unparsed when the expression could not be evaluated: bad syntax or a step that breaks a rule).
Score score_answer(const Problem& p, ProblemKind kind, const std::optional<std::string>& answer,
                   const ScoreOptions& o);

}  // namespace hogwild::eval
