// The choice of a session's method and plain Hogwild!'s rules (method.h; docs/ARCHITECTURE.md §4
// "Methods"), which the other methods fall back on.
#include "hogwild/method.h"

#include <algorithm>

#include "hogwild/session.h"

namespace hogwild {

std::unique_ptr<SessionMethod> SessionMethod::make(const SessionOptions& options) {
  if (options.skeleton) return std::make_unique<SkeletonMethod>();
  if (options.layout == Layout::independent) return std::make_unique<IndependentMethod>();
  return std::make_unique<HogwildMethod>();
}

// A worker stops for good at max_tokens_per_worker, and each serial step samples one token of every
// active worker: the session runs at most that many serial steps.
int64_t HogwildMethod::serial_steps_bound(const SessionOptions& o) const {
  const int64_t m = o.max_tokens_per_worker;
  if (m <= 0) return o.budget;
  return o.budget > 0 ? std::min(o.budget, m) : m;
}

// Worker w's first step opens with its step prefix (empty in formatting "plain").
bool HogwildMethod::continues_prompt(const Session& s, int w) const {
  return s.fmt_.step_start(w, 1, false).empty();
}

void HogwildMethod::begin(Session& s) {
  for (int w = 0; w < s.opt_.n_workers; ++w) s.start_step(w, true);
}

// A final answer ends the run for all (unless SessionOptions::stop_on_answer is off); otherwise
// the step joins the history and the worker opens its next one.
bool HogwildMethod::on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                                StepReport& rep) {
  if (answer && s.opt_.stop_on_answer) return s.end_with_answer(w, answer, rep);
  s.next_step(w);
  return false;
}

// The worker stopped; the others go on, unless its last step held an answer.
bool HogwildMethod::on_eos(Session& s, int w, const std::optional<std::string>& answer,
                           StepReport& rep) {
  if (answer && s.opt_.stop_on_answer) return s.end_with_answer(w, answer, rep);
  return false;
}

void HogwildMethod::take_final(SessionResult& result, FinisherResult&& f) const {
  result.answer = f.answer;
  result.finisher = std::move(f);
}

void HogwildMethod::unreached_snapshot(SessionResult& result, int64_t budget) const {
  FinisherResult f;
  f.serial_step = budget;
  f.answer = result.answer;
  f.reached = false;
  f.worker = -1;
  result.snapshots.push_back(f);
}

}  // namespace hogwild
