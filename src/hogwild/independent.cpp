// Independent samples (method.h IndependentMethod; session.h, "Independent layout"): a worker
// stops on its own answer, EOS, token cap or context; the others go on. The run's end gives the
// workers still writing its reason; a finisher runs per worker without an answer; the result's
// answer is the workers' plain vote.
#include <set>

#include "hogwild/answer.h"
#include "hogwild/method.h"
#include "hogwild/session.h"

namespace hogwild {

void IndependentMethod::start_result(SessionResult& result, int n_workers) const {
  result.workers.assign(n_workers, WorkerResult{});
}

// Every worker writes under worker 0's step prefix.
bool IndependentMethod::continues_prompt(const Session& s, int) const {
  return s.fmt_.step_start(0, 1, false).empty();
}

// Worker w stops here: its last sampled token is not fed (a one-worker session would end here).
void IndependentMethod::stop_worker(Session& s, int w, StopReason reason,
                                    const std::optional<std::string>& answer, StepReport& rep) {
  Session::WorkerState& ws = s.workers_[w];
  ws.active = false;
  ws.feed.clear();
  WorkerResult& r = s.result_.workers[w];
  r.stop_reason = answer ? StopReason::answer : reason;
  r.answer = answer;
  r.serial_steps = s.serial_;
  if (answer) rep.answer = true;
}

// A worker whose view would pass max_context after the next forward stops before it.
void IndependentMethod::before_forward(Session& s) {
  const std::vector<std::vector<BlockId>> views = build_views(s.layout_state());
  for (size_t w = 0; w < s.workers_.size(); ++w) {
    Session::WorkerState& ws = s.workers_[w];
    if (!ws.active || ws.feed.empty()) continue;
    int64_t len = 0;
    for (BlockId b : views[w]) {
      len += s.be_.block_len(b);
      for (const Session::Feed& f : ws.feed) len += f.block == b;
    }
    if (len <= s.max_context_) continue;
    ws.active = false;
    ws.feed.clear();
    WorkerResult& r = s.result_.workers[w];
    r.stop_reason = StopReason::max_context;
    r.serial_steps = s.serial_;
  }
}

// A step with an answer stops its worker alone (the others go on); else the worker goes on.
bool IndependentMethod::on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                                    StepReport& rep) {
  if (answer && s.opt_.stop_on_answer) {
    stop_worker(s, w, StopReason::answer, answer, rep);
    return false;
  }
  return HogwildMethod::on_step_end(s, w, answer, rep);
}

bool IndependentMethod::on_eos(Session& s, int w, const std::optional<std::string>& answer,
                               StepReport& rep) {
  stop_worker(s, w, StopReason::eos, answer, rep);
  return false;
}

bool IndependentMethod::on_token_cap(Session& s, int w, StepReport& rep) {
  stop_worker(s, w, StopReason::max_tokens, std::nullopt, rep);
  return false;
}

// The run ended (budget, interrupt, or every worker stopped): the workers still writing stop with
// the run's reason.
void IndependentMethod::on_decoding_end(Session& s) {
  for (WorkerResult& r : s.result_.workers) {
    if (r.stop_reason != StopReason::none) continue;
    r.stop_reason = s.result_.stop_reason;
    r.serial_steps = s.serial_;
  }
}

// A worker's own answer needs no finisher.
std::vector<int> IndependentMethod::finisher_workers(const Session& s) const {
  std::vector<int> workers;
  for (int w = 0; w < s.opt_.n_workers; ++w)
    if (!s.result_.workers[w].answer) workers.push_back(w);
  return workers;
}

void IndependentMethod::take_final(SessionResult& result, FinisherResult&& f) const {
  WorkerResult& r = result.workers[f.worker];
  r.answer = f.answer;
  r.finisher = std::move(f);
}

// The run's answer and stop reason from its workers' (after their final finishers): the plain
// vote over identical answer texts (eval/runner.h votes by equivalence); the workers' common stop
// reason, or mixed.
void IndependentMethod::settle(SessionResult& result) const {
  std::vector<std::optional<std::string>> answers;
  std::set<StopReason> reasons;
  for (const WorkerResult& r : result.workers) {
    answers.push_back(r.answer);
    reasons.insert(r.stop_reason);
  }
  const int best =
      majority_answer(answers, [](const std::string& a, const std::string& b) { return a == b; });
  result.answer = best >= 0 ? answers[best] : std::nullopt;
  result.answer_worker = best;
  if (result.stop_reason != StopReason::interrupted && result.stop_reason != StopReason::cancelled)
    result.stop_reason = reasons.size() == 1 ? *reasons.begin() : StopReason::mixed;
}

// One entry per worker, with the answer it had when the run ended.
void IndependentMethod::unreached_snapshot(SessionResult& result, int64_t budget) const {
  for (size_t w = 0; w < result.workers.size(); ++w) {
    FinisherResult f;
    f.serial_step = budget;
    f.answer = result.workers[w].answer;
    f.reached = false;
    f.worker = static_cast<int>(w);
    result.snapshots.push_back(f);
  }
}

}  // namespace hogwild
