// The checks of a session request that relate several fields, over the one table of ranges of
// core/request_fields.h: workers against the layout and the formatting, snapshots against the
// budget, the view against the model's context. `hogwild run`, `eval`, the engine's request
// builder (engine/request.h), the Session and the HTTP server all call these, so each mistake
// gets one sentence wherever it is made.
#pragma once

#include <cstdint>
#include <vector>

#include "core/request_fields.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"

namespace hogwild {

struct SessionOptions;

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

/// Throws RequestError (RequestField::kv_chunk) unless kv_chunk is in its range, and unless it is 0
/// when there is no kv_budget (chunks are what a budget forgets: alone the setting does nothing).
void check_kv_chunk(int64_t kv_chunk, int64_t kv_budget);
/// Throws RequestError (RequestField::kv_budget) for a KV budget outside its range, or a budget
/// (> 0) on a layout whose history never grows (contiguous, independent, Skeleton-of-Thought).
void check_kv_budget(int64_t kv_budget, Layout layout, bool skeleton);

/// Throws RequestError (RequestField::kv_budget) when a budget (> 0) is below what is never
/// forgotten: the prompt's prompt_tokens plus the history's last `recent` tokens
/// (ForgetPolicy::recent).
void check_kv_budget_fits(int64_t kv_budget, int64_t prompt_tokens, int64_t recent);

/// Every field of `o` against its range, workers by check_workers, max_context against
/// `model_context`; snapshots by range only (a Session reports a snapshot past its end as not
/// reached; requests refuse it earlier with check_snapshots). Throws RequestError.
void check_session_options(const SessionOptions& o, const Formatting& fmt, int64_t model_context);

}  // namespace hogwild
