// Generation for `hogwild eval`: one session per (problem, sample) on the Engine (src/engine),
// up to `concurrency` sessions sharing every forward. One generation gives every budget point:
// the session runs to the largest budget and the finisher runs at each smaller one (snapshots,
// the paper's protocol), so a whole accuracy-vs-serial-steps curve costs one run.
//
// Budget points (budgets b_1 < ... < b_n):
//   b_i, i < n   the snapshot at b_i: the finisher's answer on the state after b_i serial steps;
//                when the run ended earlier (a worker's step held an answer, EOS, context), the
//                run's final answer, with the serial steps the run used.
//   b_n          the run's own end: a step's answer, or the finisher at b_n.
// --compat paper (the reference implementation's protocol, docs/EVAL.md):
//   - the snapshot for b_i (i < n) is taken after b_i + 1 serial steps (recorded as b_i);
//   - when any worker emits end-of-sequence every worker stops (no finisher: the answer is the
//     last \boxed{} / code block in the text written so far, if any);
//   - the finisher decodes a fixed number of tokens: 16 (LIMO), 64 (OlympiadBench), 1024
//     (LiveCodeBench), else the formatting's finisher.max_tokens.
// Self-consistency is one session of `workers` independent workers (hogwild/session.h,
// "Independent layout": the prompt's KV shared, each worker stopping alone, a finisher per worker
// at every budget) and each budget point is the majority vote of its workers' answers there.
// Skeleton-of-Thought is one session of that name (session.h): outline, expansions, answer, all
// counted in serial steps; its budget points are read like hogwild's.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/stop_reason.h"
#include "engine/model.h"
#include "eval/dataset.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"
#include "sampling/sampler.h"

namespace hogwild::eval {

/// How problems are generated (everything but the problem and the seed).
struct RunSpec {
  /// "hogwild"; "single" (1 worker, same prompt machinery); "self-consistency" (one session of
  /// `workers` workers in the independent layout, worker w with seed + w; each budget point is
  /// the majority vote of their answers, majority_vote()); "sot" (Skeleton-of-Thought, `workers` =
  /// the most outline points).
  std::string method = "hogwild";
  int workers = 2;
  ProblemKind kind = ProblemKind::math;  ///< how self-consistency compares answers
  Layout layout = Layout::combined;
  std::vector<int64_t> budgets;  ///< serial steps, strictly increasing, >= 1
  bool compat_paper = false;
  std::string dataset;      ///< built-in name (for the compat finisher length) or path
  std::string format_ref;   ///< the formatting as make_request takes it (built-in name or file)
  Formatting formatting;    ///< format_ref resolved (code variant for code datasets)
  SamplingParams sampling;  ///< seed is replaced per job
  int64_t collab_every = -1;
  int64_t max_context = 0;
  int64_t kv_budget = 0;     // ProblemRequest::kv_budget: 0 = no KV budget
  int64_t kv_chunk = 0;      // ProblemRequest::kv_chunk: 0 = the default
  std::string kv_policy;     // ProblemRequest::kv_policy: "" = evict
  double kv_redundancy = 0;  // ProblemRequest::kv_redundancy: 0 = off
  bool prefix_cache = true;  // EngineOptions::prefix_cache (--no-prefix-cache: false)
};

/// One budget point of one generation.
struct BudgetPoint {
  int64_t budget = 0;
  std::optional<std::string> answer;       ///< extracted (boxed content or code), nullopt = none
  int64_t serial_steps = 0;                ///< serial steps the answer is based on
  std::vector<int64_t> tokens_per_worker;  ///< tokens sampled by each worker up to those steps
  std::string
      source;        ///< "step" (a worker's finished step), "finisher", "text" (compat EOS), "none"
  bool cut = false;  ///< the finisher opened an answer and did not close it (token cap or EOS)
};

struct Generation {
  std::vector<BudgetPoint> points;            ///< one per RunSpec::budgets entry, in order
  StopReason stop_reason = StopReason::none;  ///< SessionResult::stop_reason, or error
  std::string error;  ///< the engine's error for this problem's run ("" when none)
  /// false: the run could not start or failed (error is set: a prompt beyond the context, ...).
  /// Such a run has no answer to score: its result lines say "started": false, "correct": null.
  bool started = true;
  int64_t serial_steps = 0, prompt_tokens = 0;
  std::vector<int64_t> tokens_per_worker;
  double wall_seconds = 0;    ///< from submission to the end of the session
  nlohmann::json transcript;  ///< TranscriptRecorder JSON + snapshots + the budget points
  /// What the workers wrote: the history after the prompt, then each worker's unfinished step
  /// (for the judge, judge.h).
  std::string run_text;
};

/// A unit of work: problem index into the problem list, sample number, the seed it runs with.
struct Job {
  size_t problem = 0;
  int sample = 0;
  uint64_t seed = 0;
};

/// Self-consistency's vote (hogwild/answer.h majority_answer): answers fall into classes of
/// equivalent answers (math_equal; code and countdown: identical text) in sample order; the
/// largest class wins, a tie goes to the class seen first; its first answer is returned. nullopt
/// when no sample has an answer.
std::optional<std::string> majority_vote(const std::vector<std::optional<std::string>>& answers,
                                         ProblemKind kind);

/// The finisher length --compat paper uses for a dataset name (0 = the formatting's own).
int64_t compat_finisher_tokens(const std::string& dataset);

/// Serial steps at which the session takes its snapshots for spec's budgets (all but the last;
/// +1 each with compat_paper).
std::vector<int64_t> snapshot_steps(const RunSpec& spec);

/// Runs every job on an Engine over model's backend with at most `concurrency` sessions at once
/// (they share each forward; every job is one session).
/// `done` is called on this thread as each job finishes, in finishing order; `progress` after every
/// engine step with the tokens sampled in it. A session the engine refuses or that fails gives a
/// Generation with stop_reason error and the message. Throws hogwild::Error for a bad spec
/// (method, workers, budgets).
void run_jobs(Model& model, const RunSpec& spec, const std::vector<Problem>& problems,
              const std::vector<Job>& jobs, int concurrency,
              const std::function<void(const Job&, Generation&&)>& done,
              const std::function<void(int64_t tokens)>& progress = {});

}  // namespace hogwild::eval
