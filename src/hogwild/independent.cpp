// The independent layout's per-worker rules (session.h, "Independent layout"): a worker stops on
// its own answer, EOS, token cap or context; the others go on. The run's end gives the workers
// still writing its reason; the result's answer is the workers' plain vote.
#include <set>

#include "hogwild/answer.h"
#include "hogwild/session.h"

namespace hogwild {

// Worker w stops here: its last sampled token is not fed (a one-worker session would end here).
bool Session::stop_worker(int w, StopReason reason, const std::optional<std::string>& answer,
                          StepReport& rep) {
  WorkerState& ws = workers_[w];
  ws.active = false;
  ws.feed.clear();
  WorkerResult& r = result_.workers[w];
  r.stop_reason = answer ? StopReason::answer : reason;
  r.answer = answer;
  r.serial_steps = serial_;
  if (answer) rep.answer = true;
  return false;  // the others go on
}

// A worker whose view would pass max_context after the next forward stops before it.
void Session::stop_long_views() {
  const std::vector<std::vector<BlockId>> views = build_views(layout_state());
  for (size_t w = 0; w < workers_.size(); ++w) {
    WorkerState& ws = workers_[w];
    if (!ws.active || ws.feed.empty()) continue;
    int64_t len = 0;
    for (BlockId b : views[w]) {
      len += be_.block_len(b);
      for (const Feed& f : ws.feed) len += f.block == b;
    }
    if (len <= max_context_) continue;
    ws.active = false;
    ws.feed.clear();
    WorkerResult& r = result_.workers[w];
    r.stop_reason = StopReason::max_context;
    r.serial_steps = serial_;
  }
}

// The run ended (budget, interrupt, or every worker stopped): the workers still writing stop with
// the run's reason.
void Session::finish_independent() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    WorkerResult& r = result_.workers[w];
    if (r.stop_reason != StopReason::none) continue;
    r.stop_reason = result_.stop_reason;
    r.serial_steps = serial_;
  }
}

// The run's answer and stop reason from its workers' (after their final finishers): the plain
// vote over identical answer texts (eval/runner.h votes by equivalence); the workers' common stop
// reason, or mixed.
void Session::vote_independent() {
  std::vector<std::optional<std::string>> answers;
  std::set<StopReason> reasons;
  for (const WorkerResult& r : result_.workers) {
    answers.push_back(r.answer);
    reasons.insert(r.stop_reason);
  }
  const int best =
      majority_answer(answers, [](const std::string& a, const std::string& b) { return a == b; });
  result_.answer = best >= 0 ? answers[best] : std::nullopt;
  result_.answer_worker = best;
  if (result_.stop_reason != StopReason::interrupted &&
      result_.stop_reason != StopReason::cancelled)
    result_.stop_reason = reasons.size() == 1 ? *reasons.begin() : StopReason::mixed;
}

}  // namespace hogwild
