// Scoring glue; see score.h.
#include "eval/score.h"

#include "collab/countdown.h"
#include "core/error.h"
#include "eval/code_tests.h"

namespace hogwild::eval {

Score score_answer(const Problem& p, ProblemKind kind, const std::optional<std::string>& answer,
                   const ScoreOptions& o) {
  Score s;
  s.tests = static_cast<int>(p.tests.size());
  if (!answer || answer->find_first_not_of(" \t\r\n") == std::string::npos) return s;
  if (kind == ProblemKind::code) {
    if (!o.sandbox) fail("scoring code needs a sandbox");
    CodeVerdict v = run_code_tests(*o.sandbox, p, *answer);
    s.status = ParseStatus::ok;
    s.correct = v.passed;
    s.tests = v.tests;
    s.tests_passed = v.tests_passed;
    s.detail = v.detail.empty() ? v.status : v.status + ": " + v.detail;
    return s;
  }
  if (kind == ProblemKind::countdown) {
    const collab::CountdownCheck c = collab::check_countdown(*answer, p.numbers, p.target);
    s.correct = c.ok;
    // A positive value: the expression was read and evaluated (its numbers or value may be wrong).
    s.status = c.ok || c.value > 0 ? ParseStatus::ok : ParseStatus::unparsed;
    s.detail = c.ok ? "reaches the target" : c.error;
    return s;
  }
  std::vector<double> tol = kind == ProblemKind::physics ? p.tolerance : std::vector<double>{};
  s.correct = parts_equal(*answer, p.gold, p.gold_ordered, tol, o.math, &s.status);
  return s;
}

}  // namespace hogwild::eval
