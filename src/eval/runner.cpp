// Jobs on the Engine, budget points from snapshots; see runner.h.
#include "eval/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/request.h"
#include "eval/math_equiv.h"
#include "hogwild/answer.h"
#include "hogwild/transcript.h"

namespace hogwild::eval {
namespace {

/// Per-session observer: the transcript, the serial step of every sampled token (tokens per
/// worker at each budget), and the --compat paper stop-everyone-on-EOS rule.
class JobObserver : public SessionObserver {
 public:
  JobObserver(std::vector<std::string> names, bool stop_all_on_eos)
      : rec_(names), steps_(names.size()), stop_all_on_eos_(stop_all_on_eos) {}
  void on_step_start(int w, int k, const std::string& b, bool c) override {
    rec_.on_step_start(w, k, b, c);
  }
  void on_token(const TokenEvent& e) override {
    rec_.on_token(e);
    if (e.eos && stop_all_on_eos_) {
      eos_stop_ = true;
      interrupt_.store(true);
    }
    if (!e.eos && e.worker >= 0 && e.worker < static_cast<int>(steps_.size()))
      steps_[e.worker].push_back(e.serial_step);
  }
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override {
    rec_.on_step_end(w, k, t, a);
  }
  /// Tokens each worker sampled in serial steps 1..s.
  std::vector<int64_t> tokens_up_to(int64_t s) const {
    std::vector<int64_t> n;
    for (const auto& v : steps_) n.push_back(std::upper_bound(v.begin(), v.end(), s) - v.begin());
    return n;
  }
  const TranscriptRecorder& recorder() const { return rec_; }
  const std::atomic<bool>* interrupt() const { return &interrupt_; }
  bool eos_stop() const { return eos_stop_; }

 private:
  TranscriptRecorder rec_;
  std::vector<std::vector<int64_t>> steps_;  // (n_workers) serial step of each sampled token
  bool stop_all_on_eos_ = false, eos_stop_ = false;
  std::atomic<bool> interrupt_{false};
};

struct Active {
  Job job;
  std::unique_ptr<JobObserver> obs;
  std::chrono::steady_clock::time_point start;
};

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Generation error_generation(const RunSpec& spec, const std::string& message) {
  Generation g;
  g.stop_reason = "error";
  g.error = message;
  for (int64_t b : spec.budgets) g.points.push_back({b, std::nullopt, 0, {}, "none", false});
  g.transcript = {{"error", message}};
  return g;
}

Generation make_generation(const RunSpec& spec, const SessionResult& r, const JobObserver& obs) {
  Generation g;
  g.stop_reason = r.stop_reason;
  g.serial_steps = r.serial_steps;
  g.prompt_tokens = r.prompt_tokens;
  g.tokens_per_worker = r.tokens_per_worker;
  // The run's own final answer (the last budget point, and every snapshot it did not reach).
  BudgetPoint last;
  last.budget = spec.budgets.back();
  last.answer = r.answer;
  last.serial_steps = r.serial_steps;
  last.source = r.finisher ? "finisher" : r.answer ? "step" : "none";
  last.cut = r.finisher && !r.finisher->answer && !r.finisher->continuation.empty();
  if (obs.eos_stop() && !r.answer) {
    std::string text = r.history_text;
    for (const auto& u : r.unfinished) text += u;
    last.answer = extract_answer(text, spec.formatting.answer.kind);
    last.source = last.answer ? "text" : "none";
  }
  last.tokens_per_worker = obs.tokens_up_to(last.serial_steps);
  for (size_t i = 0; i + 1 < spec.budgets.size(); ++i) {
    BudgetPoint p = last;
    p.budget = spec.budgets[i];
    if (i < r.snapshots.size() && r.snapshots[i].reached) {
      const FinisherResult& s = r.snapshots[i];
      p.answer = s.answer;
      p.serial_steps = s.serial_step;
      p.source = "finisher";
      p.cut = !s.answer && !s.continuation.empty();
      p.tokens_per_worker = obs.tokens_up_to(s.serial_step);
    }
    g.points.push_back(std::move(p));
  }
  g.points.push_back(std::move(last));
  g.transcript = obs.recorder().to_json(r);
  nlohmann::json pts = nlohmann::json::array();
  for (const BudgetPoint& p : g.points)
    pts.push_back({{"budget", p.budget},
                   {"answer", p.answer ? nlohmann::json(utf8_lossy(*p.answer)) : nlohmann::json()},
                   {"serial_steps", p.serial_steps},
                   {"source", p.source},
                   {"cut", p.cut}});
  g.transcript["budget_points"] = std::move(pts);
  g.transcript["history_text"] = utf8_lossy(r.history_text);
  return g;
}

}  // namespace

int64_t compat_finisher_tokens(const std::string& dataset) {
  if (dataset == "limo") return 16;
  if (dataset.rfind("olympiadbench", 0) == 0) return 64;
  if (dataset == "livecodebench") return 1024;
  return 0;
}

std::vector<int64_t> snapshot_steps(const RunSpec& spec) {
  std::vector<int64_t> s;
  for (size_t i = 0; i + 1 < spec.budgets.size(); ++i)
    s.push_back(spec.budgets[i] + (spec.compat_paper ? 1 : 0));
  return s;
}

std::optional<std::string> majority_vote(const std::vector<std::optional<std::string>>& answers,
                                         ProblemKind kind) {
  std::vector<std::pair<std::string, int>> classes;  // representative, votes; in first-seen order
  for (const auto& a : answers) {
    if (!a || a->find_first_not_of(" \t\r\n") == std::string::npos) continue;
    bool placed = false;
    for (auto& [rep, votes] : classes) {
      const bool same = kind == ProblemKind::code ? *a == rep : math_equal(*a, rep);
      if (same) {
        ++votes;
        placed = true;
        break;
      }
    }
    if (!placed) classes.push_back({*a, 1});
  }
  if (classes.empty()) return std::nullopt;
  size_t best = 0;  // ties: the class seen first (strict > keeps it)
  for (size_t i = 1; i < classes.size(); ++i)
    if (classes[i].second > classes[best].second) best = i;
  return classes[best].first;
}

/// One self-consistency generation from its samples' generations: votes per budget point.
static Generation vote_generation(const RunSpec& spec, ProblemKind kind,
                                  std::vector<Generation>& samples) {
  Generation g;
  std::set<std::string> reasons;
  nlohmann::json subs = nlohmann::json::array(), votes = nlohmann::json::array();
  for (Generation& s : samples) {
    reasons.insert(s.stop_reason);
    g.serial_steps = std::max(g.serial_steps, s.serial_steps);
    g.prompt_tokens = std::max(g.prompt_tokens, s.prompt_tokens);
    g.tokens_per_worker.push_back(s.tokens_per_worker.empty() ? 0 : s.tokens_per_worker[0]);
    g.wall_seconds = std::max(g.wall_seconds, s.wall_seconds);
    if (!s.error.empty() && g.error.empty()) g.error = s.error;
    subs.push_back(std::move(s.transcript));
  }
  g.stop_reason = reasons.size() == 1 ? *reasons.begin() : "mixed";
  for (size_t i = 0; i < spec.budgets.size(); ++i) {
    BudgetPoint p;
    p.budget = spec.budgets[i];
    std::vector<std::optional<std::string>> answers;
    nlohmann::json each = nlohmann::json::array();
    for (const Generation& s : samples) {
      const BudgetPoint& q = s.points[i];
      answers.push_back(q.answer);
      p.serial_steps = std::max(p.serial_steps, q.serial_steps);
      p.tokens_per_worker.push_back(q.tokens_per_worker.empty() ? 0 : q.tokens_per_worker[0]);
      p.cut = p.cut || q.cut;
      each.push_back(q.answer ? nlohmann::json(utf8_lossy(*q.answer)) : nlohmann::json());
    }
    p.answer = majority_vote(answers, kind);
    p.source = p.answer ? "vote" : "none";
    votes.push_back(
        {{"budget", p.budget},
         {"answers", each},
         {"chosen", p.answer ? nlohmann::json(utf8_lossy(*p.answer)) : nlohmann::json()}});
    g.points.push_back(std::move(p));
  }
  g.transcript = {{"samples", std::move(subs)}, {"votes", std::move(votes)}};
  return g;
}

void run_jobs(Model& model, const RunSpec& spec, const std::vector<Problem>& problems,
              const std::vector<Job>& jobs, int concurrency,
              const std::function<void(const Job&, Generation&&)>& done,
              const std::function<void(int64_t)>& progress) {
  const bool vote = spec.method == "self-consistency";
  if (spec.method != "hogwild" && spec.method != "single" && !vote)
    fail(
        "method '{}' is not built yet; use hogwild, single or self-consistency (docs/EVAL.md "
        "says what Skeleton-of-Thought needs)",
        spec.method);
  if (spec.budgets.empty()) fail("no budgets; give e.g. --budgets 256,512,1024");
  for (size_t i = 0; i < spec.budgets.size(); ++i)
    if (spec.budgets[i] < 1 || (i > 0 && spec.budgets[i] <= spec.budgets[i - 1]))
      fail("--budgets must be strictly increasing serial-step counts >= 1");
  if (concurrency < 1) fail("--concurrency must be >= 1 sessions");
  // Self-consistency: spec.workers independent one-worker sessions per job (sub-sessions).
  const int subs = vote ? spec.workers : 1;
  const int session_workers = vote ? 1 : spec.workers;

  EngineOptions eo;
  eo.max_sessions = std::max(concurrency, subs);
  eo.max_queue = eo.max_sessions;
  Engine engine(model.backend(), model.codec(), eo);
  struct Pending {
    Job job;
    int left = 0;
    std::vector<Generation> parts;
  };
  std::map<size_t, Pending> pending;                  // by job index
  std::map<SessionId, std::pair<size_t, int>> owner;  // session -> (job index, sub-session)
  std::map<SessionId, Active> active;
  size_t next = 0;
  const std::vector<std::string> names(spec.formatting.worker_names.begin(),
                                       spec.formatting.worker_names.begin() + session_workers);
  const int64_t compat_tokens = spec.compat_paper ? compat_finisher_tokens(spec.dataset) : 0;

  auto part_done = [&](size_t ji, int sub, Generation&& g) {
    Pending& p = pending[ji];
    p.parts[sub] = std::move(g);
    if (--p.left > 0) return;
    Generation out = vote ? vote_generation(spec, spec.kind, p.parts) : std::move(p.parts[0]);
    const Job job = p.job;
    pending.erase(ji);
    done(job, std::move(out));
  };

  auto submit_more = [&] {
    while (static_cast<int>(active.size()) + subs <= std::max(concurrency, subs) &&
           next < jobs.size()) {
      const size_t ji = next++;
      const Job job = jobs[ji];
      pending[ji] = Pending{job, subs, std::vector<Generation>(subs)};
      for (int sub = 0; sub < subs; ++sub) {
        Active a{job, std::make_unique<JobObserver>(names, spec.compat_paper),
                 std::chrono::steady_clock::now()};
        try {
          ProblemRequest pr;
          pr.problem = problems.at(job.problem).text;
          pr.formatting = spec.format_ref;
          pr.workers = session_workers;
          pr.layout = spec.layout;
          pr.budget = spec.budgets.back();
          pr.snapshots = snapshot_steps(spec);
          pr.collab_every = spec.collab_every;
          pr.max_context = spec.max_context;
          pr.sampling = spec.sampling;
          pr.sampling.seed = job.seed + static_cast<uint64_t>(sub);
          SessionRequest req = make_request(model, pr);
          req.formatting = spec.formatting;
          if (compat_tokens > 0) req.formatting.finisher.max_tokens = compat_tokens;
          req.options.interrupt = a.obs->interrupt();
          req.observer = a.obs.get();
          const SessionId id = engine.submit(std::move(req));
          owner[id] = {ji, sub};
          active.emplace(id, std::move(a));
        } catch (const Error& e) {
          part_done(ji, sub, error_generation(spec, e.what()));
        }
      }
    }
  };

  submit_more();
  while (!active.empty()) {
    int64_t tokens = 0;
    for (const SessionEvent& ev : engine.step())
      for (int t : ev.report.tokens) tokens += t;
    if (progress) progress(tokens);
    for (auto it = active.begin(); it != active.end();) {
      if (!engine.finished(it->first)) {
        ++it;
        continue;
      }
      const std::string err = engine.error(it->first);
      SessionResult r = engine.take(it->first);
      Generation g =
          err.empty() ? make_generation(spec, r, *it->second.obs) : error_generation(spec, err);
      g.wall_seconds = since(it->second.start);
      const auto [ji, sub] = owner[it->first];
      owner.erase(it->first);
      it = active.erase(it);
      part_done(ji, sub, std::move(g));
    }
    submit_more();
  }
}

}  // namespace hogwild::eval
