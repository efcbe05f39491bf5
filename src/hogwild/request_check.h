// The checks of a session request that relate several fields, over the one table of ranges of
// core/request_fields.h: workers against the layout and the formatting, snapshots against the
// budget, the view against the model's context. `hogwild run`, `eval`, the engine's request
// builder (engine/request.h), the Session and the HTTP server all call these, so each mistake
// gets one sentence wherever it is made.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/request_fields.h"
#include "hogwild/forgetting.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"

namespace hogwild {

struct SessionOptions;

/// Throws RequestError (RequestField::problem) when the problem text is empty or only blanks
/// (spaces, tabs, line ends): there is nothing to solve.
void check_problem(std::string_view problem);

/// Most workers of a session on `layout`: kMaxIndependentWorkers for the independent layout and
/// Skeleton-of-Thought (their workers all write under the first name), else the number of worker
/// names of `fmt`.
int max_workers(Layout layout, bool skeleton, const Formatting& fmt);

/// Throws RequestError (RequestField::workers) unless 1 <= workers <= max_workers(...), saying
/// which rule bounds it; and when `skeleton` is set on a layout other than independent.
void check_workers(int workers, Layout layout, bool skeleton, const Formatting& fmt);

/// Throws RequestError (RequestField::snapshot) for a snapshot outside its range, or beyond
/// `budget` serial steps when the budget is set (> 0): the run ends there, so the finisher would
/// never run at it.
void check_snapshots(const std::vector<int64_t>& snapshots, int64_t budget);

/// Throws RequestError (RequestField::max_context) for a max_context outside its range or beyond
/// `model_context` tokens (config.json max_position_embeddings; 0 = unknown, not checked).
void check_max_context(int64_t max_context, int64_t model_context);

/// Tokens the first serial step of a session adds to its longest view beyond the prompt
/// (docs/ARCHITECTURE.md §3, hogwild/layout.h): each worker's first step opening, and in the
/// combined and contiguous layouts the headers and separators around the other workers' steps
/// (Skeleton-of-Thought: the outline's opening). Each text counted by count_tokens (the model's
/// tokenizer, no special tokens added). Session::plan refuses a first step whose longest view
/// passes the context; this is that view's length less the prompt, before anything runs.
int64_t first_step_tokens(const Formatting& fmt, Layout layout, int n_workers, bool skeleton,
                          const std::function<int64_t(const std::string&)>& count_tokens);

/// Throws RequestError (RequestField::context) when the prompt (prompt_tokens), the first serial
/// step (first_step: first_step_tokens) and one generated token do not fit the context:
/// max_context tokens, or model_context (config.json max_position_embeddings) when max_context
/// is 0; neither known (both 0): not checked. The sentence gives the three counts and what to
/// change, as the HTTP server's context_length_exceeded does for a plain prompt: a shorter
/// problem, and where the other workers' steps are in every view (n_workers > 1 on the combined
/// or contiguous layout) fewer workers or the interleaved layout.
void check_first_step_fits(int64_t prompt_tokens, int64_t first_step, int64_t max_context,
                           int64_t model_context, int n_workers, Layout layout);

/// Throws RequestError (RequestField::kv_chunk) unless kv_chunk is in its range, and unless it is 0
/// when there is no kv_budget (chunks are what a budget forgets: alone the setting does nothing).
void check_kv_chunk(int64_t kv_chunk, int64_t kv_budget);
/// Throws RequestError (RequestField::kv_budget) for a KV budget outside its range, or a budget
/// (> 0) on a layout whose history never grows (contiguous, independent, Skeleton-of-Thought).
void check_kv_budget(int64_t kv_budget, Layout layout, bool skeleton);

/// Throws RequestError (RequestField::kv_policy) for a policy name other than evict or summarise
/// (forgetting.h parse_kv_policy), for summarise without a kv_budget (alone it does nothing), and
/// for a kv_chunk (> 0) with summarise (chunks are what evict forgets; summarise drops whole
/// steps). Returns the policy; "" is evict.
KvPolicy check_kv_policy(std::string_view kv_policy, int64_t kv_budget, int64_t kv_chunk);

/// Throws RequestError (RequestField::kv_redundancy) unless kv_redundancy (R-KV's 1 - lambda,
/// ForgetPolicy::redundancy_weight) is in [0, 1] (check_real_field), and unless it is 0 when there
/// is no kv_budget or the policy is summarise (the term ranks the chunks evict forgets). Returns
/// it.
double check_kv_redundancy(double kv_redundancy, int64_t kv_budget, KvPolicy policy);

/// Throws RequestError (RequestField::kv_budget) when a budget (> 0) is below what is never
/// forgotten: the prompt's prompt_tokens plus the history's last `recent` tokens
/// (ForgetPolicy::recent).
void check_kv_budget_fits(int64_t kv_budget, int64_t prompt_tokens, int64_t recent);
/// The same for the summarise policy (forgetting.h summary_trigger): the budget must hold the
/// prompt, one whole summary step (summary_step: its opening, summary_tokens generated and the
/// separator; summary_step_tokens) and the room n_workers * summary_tokens that a summary is
/// started ahead of the budget, so that right after a drop no summary is due at once:
/// prompt_tokens + summary_step + n_workers * summary_tokens.
void check_kv_summary_fits(int64_t kv_budget, int64_t prompt_tokens, int n_workers,
                           int64_t summary_tokens, int64_t summary_step);
/// Tokens a summary step of one of n_workers holds at most: the longest of their summary
/// openings (Formatting::summary_start at a four-digit step number), summary.max_tokens and the
/// step separator, each text counted by count_tokens (the model's tokenizer).
int64_t summary_step_tokens(const Formatting& fmt, int n_workers,
                            const std::function<int64_t(const std::string&)>& count_tokens);
/// check_kv_budget_fits or check_kv_summary_fits, as kv.policy says (the formatting's summary,
/// its texts counted by count_tokens).
void check_kv_fits(const ForgetPolicy& kv, int64_t prompt_tokens, int n_workers,
                   const Formatting& fmt,
                   const std::function<int64_t(const std::string&)>& count_tokens);

/// Every field of `o` against its range, workers by check_workers, max_context against
/// `model_context`; snapshots by range only (a Session reports a snapshot past its end as not
/// reached; requests refuse it earlier with check_snapshots). Throws RequestError.
void check_session_options(const SessionOptions& o, const Formatting& fmt, int64_t model_context);

}  // namespace hogwild
