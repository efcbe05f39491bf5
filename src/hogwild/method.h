// The generation methods of a Session (docs/ARCHITECTURE.md §4 "Methods"): plain Hogwild!
// (combined, interleaved or contiguous layout), independent samples with a vote (the independent
// layout, self-consistency) and Skeleton-of-Thought. The session runs the prefill, plans and
// completes the forwards, promotes steps, runs the finishers and the KV budget; at fixed points of
// a run it asks its method what to do: how the workers begin, what a step's end, an end-of-sequence
// id or a worker's token cap means, which finishers run, and how the result is settled.
//
// HogwildMethod holds the usual rules (method.cpp); IndependentMethod (independent.cpp) and
// SkeletonMethod (skeleton.cpp) change some of them and fall back on HogwildMethod's for the rest.
// The methods are friends of Session: they act on its workers and result directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/stop_reason.h"

namespace hogwild {

class Session;
class TextCodec;
struct Formatting;
struct KvNeed;
struct SessionOptions;
struct SessionResult;
struct StepReport;
struct FinisherResult;

/// The rules of one generation method, asked by the Session at the points of a run named below.
/// Hooks that return bool return true when the whole run must stop now (an answer ends it).
class SessionMethod {
 public:
  virtual ~SessionMethod() = default;
  /// The method that `options` ask for: Skeleton-of-Thought (options.skeleton), independent
  /// samples (the independent layout without skeleton), else plain Hogwild!.
  static std::unique_ptr<SessionMethod> make(const SessionOptions& options);

  /// Whether the workers are ever asked the collaboration check (SessionOptions::collab_every).
  virtual bool collaborates() const = 0;
  /// The most serial steps a session of `options` runs (0 = no bound from them; Session::
  /// serial_steps_bound). Asked before the session exists, as the next hook.
  virtual int64_t serial_steps_bound(const SessionOptions& options) const = 0;
  /// The method's own openings in the KV estimate of a session of `options` that runs at most
  /// `steps` > 0 serial steps (Session::kv_tokens_needed; kv_budget.h KvNeed), counted as `codec`
  /// encodes the texts of `formatting`.
  virtual void add_kv_need(KvNeed& need, const SessionOptions& options,
                           const Formatting& formatting, const TextCodec& codec,
                           int64_t steps) const = 0;
  /// start(): the method's part of the fresh result.
  virtual void start_result(SessionResult& result, int n_workers) const = 0;
  /// Whether worker w opens its run with no text: it then continues the prompt directly and draws
  /// its first token from the prompt's logits row (on the host; formatting "plain").
  virtual bool continues_prompt(const Session& s, int w) const = 0;
  /// After the prefill: opens the workers' first steps.
  virtual void begin(Session& s) = 0;
  /// Before each decode forward is planned (the budget and the interrupt are checked first).
  virtual void before_forward(Session& s) = 0;
  /// Worker w's token was sampled, counted and reported (eos: an end-of-sequence id, which stopped
  /// the worker; else the token is queued to be fed). Returns true when the method has dealt with
  /// it entirely: the session's step rules (step end, token cap) are then skipped.
  virtual bool take_token(Session& s, int w, bool eos, StepReport& rep) = 0;
  /// Worker w's step ended on a step separator (answer: the final answer it holds); the worker is
  /// still active.
  virtual bool on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                           StepReport& rep) = 0;
  /// Worker w drew an end-of-sequence id: its step ended there (answer: the step's) and the worker
  /// stopped.
  virtual bool on_eos(Session& s, int w, const std::optional<std::string>& answer,
                      StepReport& rep) = 0;
  /// Worker w reached SessionOptions::max_tokens_per_worker and stopped (its last token unfed).
  virtual bool on_token_cap(Session& s, int w, StepReport& rep) = 0;
  /// Decoding ended (the result's stop reason is set), before the final finisher.
  virtual void on_decoding_end(Session& s) = 0;
  /// The finishers that a snapshot or the end of the run begins, by the worker whose text each
  /// continues (-1: the whole run, finisher_view in layout.h); may be empty.
  virtual std::vector<int> finisher_workers(const Session& s) const = 0;
  /// A final finisher's result, taken into the run's result.
  virtual void take_final(SessionResult& result, FinisherResult&& f) const = 0;
  /// The run is over (after the final finishers): the result's answer and stop reason settled.
  virtual void settle(SessionResult& result) const = 0;
  /// The result's entries for a snapshot budget that the run ended before.
  virtual void unreached_snapshot(SessionResult& result, int64_t budget) const = 0;
};

/// Plain Hogwild! (combined, interleaved, contiguous): a finished step holding an answer ends the
/// run for all workers; any other finished step is followed by the worker's next one; EOS and the
/// token cap stop a worker alone; one finisher continues the whole run.
class HogwildMethod : public SessionMethod {
 public:
  bool collaborates() const override { return true; }
  /// The budget, or max_tokens_per_worker when that is smaller: each serial step samples one token
  /// of every active worker, and a worker that reached its cap stays stopped.
  int64_t serial_steps_bound(const SessionOptions& options) const override;
  /// No openings but the workers' steps (the session counts those).
  void add_kv_need(KvNeed&, const SessionOptions&, const Formatting&, const TextCodec&,
                   int64_t) const override {}
  void start_result(SessionResult&, int) const override {}
  bool continues_prompt(const Session& s, int w) const override;
  void begin(Session& s) override;
  void before_forward(Session&) override {}
  bool take_token(Session&, int, bool, StepReport&) override { return false; }
  bool on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                   StepReport& rep) override;
  bool on_eos(Session& s, int w, const std::optional<std::string>& answer,
              StepReport& rep) override;
  bool on_token_cap(Session&, int, StepReport&) override { return false; }
  void on_decoding_end(Session&) override {}
  std::vector<int> finisher_workers(const Session&) const override { return {-1}; }
  void take_final(SessionResult& result, FinisherResult&& f) const override;
  void settle(SessionResult&) const override {}
  void unreached_snapshot(SessionResult& result, int64_t budget) const override;
};

/// Independent samples (session.h "Independent layout"; self-consistency): every worker stops on
/// its own (its answer, EOS, token cap, context) while the others go on; one finisher per worker
/// without an answer; the run's answer is the workers' plain vote.
class IndependentMethod final : public HogwildMethod {
 public:
  void start_result(SessionResult& result, int n_workers) const override;
  bool continues_prompt(const Session& s, int w) const override;
  void before_forward(Session& s) override;
  bool on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                   StepReport& rep) override;
  bool on_eos(Session& s, int w, const std::optional<std::string>& answer,
              StepReport& rep) override;
  bool on_token_cap(Session& s, int w, StepReport& rep) override;
  void on_decoding_end(Session& s) override;
  std::vector<int> finisher_workers(const Session& s) const override;
  void take_final(SessionResult& result, FinisherResult&& f) const override;
  void settle(SessionResult& result) const override;
  void unreached_snapshot(SessionResult& result, int64_t budget) const override;

 private:
  // Worker w stops for `reason` (answer when it holds one); the others go on.
  static void stop_worker(Session& s, int w, StopReason reason,
                          const std::optional<std::string>& answer, StepReport& rep);
};

/// Skeleton-of-Thought (session.h "Skeleton-of-Thought"): the outline by worker 0, one expansion
/// per point, then worker 0's answer step under the usual rules. Owns the phase.
class SkeletonMethod final : public HogwildMethod {
 public:
  bool collaborates() const override { return false; }
  /// The budget alone: the expansions wake workers that stopped.
  int64_t serial_steps_bound(const SessionOptions& options) const override;
  /// The outline's and the answer's openings and every point's prefix with the point's text.
  void add_kv_need(KvNeed& need, const SessionOptions& options, const Formatting& formatting,
                   const TextCodec& codec, int64_t steps) const override;
  bool continues_prompt(const Session& s, int w) const override;
  void begin(Session& s) override;
  bool take_token(Session& s, int w, bool eos, StepReport& rep) override;
  bool on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                   StepReport& rep) override;
  bool on_eos(Session& s, int w, const std::optional<std::string>& answer,
              StepReport& rep) override;
  bool on_token_cap(Session& s, int w, StepReport& rep) override;

 private:
  enum class Phase { outline, expand, answer };
  // The outline's token (or EOS) handled: at its end the outline closes and the expansions open.
  void outline_token(Session& s, int w, bool eos, StepReport& rep);
  // Worker w's expansion ended; the answer phase begins when none runs any more.
  void expansion_end(Session& s, int w);
  // The expansions close in point order and worker 0 opens the answer step.
  void begin_answer(Session& s);
  Phase phase_ = Phase::outline;
};

}  // namespace hogwild
