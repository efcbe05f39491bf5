// Jobs on the Engine, budget points from snapshots; see runner.h.
#include "eval/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/request.h"
#include "eval/math_equiv.h"
#include "hogwild/answer.h"
#include "hogwild/request_check.h"
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
  size_t prompt_bytes = 0;  // the prompt's bytes at the head of the history text
};

/// Generation::run_text: the history after the prompt, then each unfinished step, marked.
std::string run_text(const SessionResult& r, size_t prompt_bytes) {
  std::string t = r.history_text.substr(std::min(prompt_bytes, r.history_text.size()));
  for (const std::string& u : r.unfinished)
    if (!u.empty()) t += u + " [unfinished]\n\n";
  return t;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Generation error_generation(const RunSpec& spec, const std::string& message) {
  Generation g;
  g.stop_reason = StopReason::error;
  g.error = message;
  g.started = false;
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
  if (spec.method == "sot") {
    nlohmann::json points = nlohmann::json::array();
    for (const std::string& p : r.outline_points) points.push_back(utf8_lossy(p));
    g.transcript["outline_points"] = std::move(points);
  }
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
  const int best = majority_answer(answers, [kind](const std::string& a, const std::string& b) {
    return kind == ProblemKind::code || kind == ProblemKind::countdown ? a == b : math_equal(a, b);
  });
  return best >= 0 ? answers[best] : std::nullopt;
}

namespace {

/// A self-consistency generation from its independent-layout session: at each budget point every
/// worker's answer (its step's when it answered by then, else its finisher's there, else its final
/// one when the run ended earlier) and their vote.
Generation make_vote_generation(const RunSpec& spec, const SessionResult& r,
                                const JobObserver& obs) {
  Generation g;
  g.stop_reason = r.stop_reason;
  g.serial_steps = r.serial_steps;
  g.prompt_tokens = r.prompt_tokens;
  g.tokens_per_worker = r.tokens_per_worker;
  const std::vector<int64_t> snaps = snapshot_steps(spec);
  nlohmann::json votes = nlohmann::json::array(), pts = nlohmann::json::array();
  for (size_t i = 0; i < spec.budgets.size(); ++i) {
    const bool last = i + 1 == spec.budgets.size();
    const bool reached = !last && r.serial_steps >= snaps[i];  // the snapshot was taken
    BudgetPoint p;
    p.budget = spec.budgets[i];
    p.serial_steps = reached ? snaps[i] : r.serial_steps;
    std::vector<std::optional<std::string>> answers;
    nlohmann::json each = nlohmann::json::array();
    for (size_t w = 0; w < r.workers.size(); ++w) {
      const WorkerResult& wr = r.workers[w];
      std::optional<std::string> a = wr.answer;
      const FinisherResult* f = wr.finisher ? &*wr.finisher : nullptr;
      if (reached && !(wr.stop_reason == StopReason::answer && wr.serial_steps <= snaps[i])) {
        f = nullptr;
        for (const FinisherResult& s : r.snapshots)
          if (s.serial_step == snaps[i] && s.worker == static_cast<int>(w)) f = &s;
        a = f ? f->answer : std::nullopt;
      }
      p.cut = p.cut || (f && !f->answer && !f->continuation.empty());
      answers.push_back(a);
      each.push_back(a ? nlohmann::json(utf8_lossy(*a)) : nlohmann::json());
    }
    p.answer = majority_vote(answers, spec.kind);
    p.source = p.answer ? "vote" : "none";
    p.tokens_per_worker = obs.tokens_up_to(p.serial_steps);
    const nlohmann::json chosen =
        p.answer ? nlohmann::json(utf8_lossy(*p.answer)) : nlohmann::json();
    votes.push_back({{"budget", p.budget}, {"answers", each}, {"chosen", chosen}});
    pts.push_back({{"budget", p.budget},
                   {"answer", chosen},
                   {"serial_steps", p.serial_steps},
                   {"source", p.source},
                   {"cut", p.cut}});
    g.points.push_back(std::move(p));
  }
  g.transcript = obs.recorder().to_json(r);
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerResult& wr : r.workers)
    workers.push_back(
        {{"answer", wr.answer ? nlohmann::json(utf8_lossy(*wr.answer)) : nlohmann::json()},
         {"stop_reason", stop_reason_name(wr.stop_reason)},
         {"serial_steps", wr.serial_steps}});
  g.transcript["workers"] = std::move(workers);
  g.transcript["votes"] = std::move(votes);
  g.transcript["budget_points"] = std::move(pts);
  g.transcript["history_text"] = utf8_lossy(r.history_text);
  return g;
}

/// The transcript's worker labels (formatting.h worker_labels).
std::vector<std::string> worker_labels(const RunSpec& spec) {
  return hogwild::worker_labels(spec.formatting, spec.workers, spec.method == "self-consistency",
                                spec.method == "sot");
}

/// Checks what run_jobs needs of the run before it starts: a known method, strictly increasing
/// budgets >= 1, concurrency >= 1 and a worker count its layout allows (check_workers). Throws
/// hogwild::Error naming the flag to fix.
void check_run_spec(const RunSpec& spec, int concurrency) {
  const bool vote = spec.method == "self-consistency", sot = spec.method == "sot";
  if (spec.method != "hogwild" && spec.method != "single" && !vote && !sot)
    fail("method '{}' is unknown; use hogwild, single, self-consistency or sot", spec.method);
  if (spec.budgets.empty()) fail("no budgets; give e.g. --budgets 256,512,1024");
  for (size_t i = 0; i < spec.budgets.size(); ++i)
    if (spec.budgets[i] < 1 || (i > 0 && spec.budgets[i] <= spec.budgets[i - 1]))
      fail("--budgets must be strictly increasing serial-step counts >= 1");
  if (concurrency < 1) fail("--concurrency must be >= 1 sessions");
  check_workers(spec.workers, vote || sot ? Layout::independent : spec.layout, sot,
                spec.formatting);
}

/// The session request of one job: `problem` in the run's prompt format, its workers and layout
/// (independent for self-consistency), a skeleton for sot, the largest budget with the snapshot
/// points of the others, the run's cache and sampling options with the job's `seed`;
/// compat_tokens > 0 caps the finisher (--compat paper). The caller sets the observer and the
/// interrupt. Throws hogwild::Error as make_request.
SessionRequest job_request(Model& model, const RunSpec& spec, const std::string& problem,
                           uint64_t seed, int64_t compat_tokens) {
  ProblemRequest pr;
  pr.problem = problem;
  pr.formatting = spec.format_ref;
  pr.workers = spec.workers;
  pr.layout = spec.method == "self-consistency" ? Layout::independent : spec.layout;
  pr.skeleton = spec.method == "sot";
  pr.budget = spec.budgets.back();
  pr.snapshots = snapshot_steps(spec);
  pr.collab_every = spec.collab_every;
  pr.max_context = spec.max_context;
  pr.kv_budget = spec.kv_budget;
  pr.kv_chunk = spec.kv_chunk;
  pr.kv_policy = spec.kv_policy;
  pr.kv_redundancy = spec.kv_redundancy;
  pr.sampling = spec.sampling;
  pr.sampling.seed = seed;
  SessionRequest req = make_request(model, pr);
  req.formatting = spec.formatting;
  if (compat_tokens > 0) req.formatting.finisher.max_tokens = compat_tokens;
  return req;
}

}  // namespace

void run_jobs(Model& model, const RunSpec& spec, const std::vector<Problem>& problems,
              const std::vector<Job>& jobs, int concurrency,
              const std::function<void(const Job&, Generation&&)>& done,
              const std::function<void(int64_t)>& progress) {
  check_run_spec(spec, concurrency);
  const bool vote = spec.method == "self-consistency";

  EngineOptions eo;
  eo.max_sessions = concurrency;
  eo.max_queue = concurrency;
  eo.prefix_cache = spec.prefix_cache;
  Engine engine(model.backend(), model.codec(), eo);
  std::map<SessionId, Active> active;
  size_t next = 0;
  const std::vector<std::string> names = worker_labels(spec);
  const int64_t compat_tokens = spec.compat_paper ? compat_finisher_tokens(spec.dataset) : 0;
  // --compat paper's stop-everyone-on-EOS is the hogwild protocol's; self-consistency's samples
  // stop alone.
  const bool stop_all_on_eos = spec.compat_paper && !vote;

  auto submit_more = [&] {
    while (static_cast<int>(active.size()) < concurrency && next < jobs.size()) {
      const Job job = jobs[next++];
      Active a{job, std::make_unique<JobObserver>(names, stop_all_on_eos),
               std::chrono::steady_clock::now()};
      try {
        SessionRequest req =
            job_request(model, spec, problems.at(job.problem).text, job.seed, compat_tokens);
        req.options.interrupt = a.obs->interrupt();
        req.observer = a.obs.get();
        a.prompt_bytes = model.codec().bytes(req.prompt).size();
        active.emplace(engine.submit(std::move(req)), std::move(a));
      } catch (const Error& e) {
        done(job, error_generation(spec, e.what()));
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
      Generation g = !err.empty() ? error_generation(spec, err)
                     : vote       ? make_vote_generation(spec, r, *it->second.obs)
                                  : make_generation(spec, r, *it->second.obs);
      g.wall_seconds = since(it->second.start);
      if (err.empty()) g.run_text = run_text(r, it->second.prompt_bytes);
      const Job job = it->second.job;
      it = active.erase(it);
      done(job, std::move(g));
    }
    submit_more();
  }
}

}  // namespace hogwild::eval
