#include "hogwild/request_check.h"

#include "hogwild/session.h"

namespace hogwild {

int max_workers(Layout layout, bool skeleton, const Formatting& fmt) {
  if (layout == Layout::independent || skeleton) return kMaxIndependentWorkers;
  return static_cast<int>(fmt.worker_names.size());
}

void check_workers(int workers, Layout layout, bool skeleton, const Formatting& fmt) {
  if (skeleton && layout != Layout::independent)
    throw RequestError(RequestField::workers,
                       fmt::format("Skeleton-of-Thought runs on the independent layout, not {}; "
                                   "drop the layout",
                                   layout_name(layout)));
  if (layout == Layout::independent || skeleton) {
    check_field(RequestField::workers, workers);
    return;
  }
  const int n = max_workers(layout, skeleton, fmt);
  if (workers < 1 || workers > n)
    throw RequestError(
        RequestField::workers,
        fmt::format("workers is {}; the formatting '{}' names {} workers: give 1..{}, add names to "
                    "\"worker_names\" in a formatting file, or use the independent layout "
                    "(1..{} workers that do not see each other)",
                    workers, fmt.name, n, n, kMaxIndependentWorkers));
}

void check_snapshots(const std::vector<int64_t>& snapshots, int64_t budget) {
  for (int64_t s : snapshots) {
    check_field(RequestField::snapshot, s);
    if (budget > 0 && s > budget)
      throw RequestError(RequestField::snapshot,
                         fmt::format("snapshot is {}, beyond the budget of {} serial steps where "
                                     "the run ends; give snapshots in 1..{} or raise the budget",
                                     s, budget, budget));
  }
}

void check_max_context(int64_t max_context, int64_t model_context) {
  check_field(RequestField::max_context, max_context);
  if (model_context > 0 && max_context > model_context)
    throw RequestError(RequestField::max_context,
                       fmt::format("max_context is {}, beyond the model's context of {} tokens "
                                   "(max_position_embeddings in config.json): positions past it "
                                   "are untrained; give 0..{}",
                                   max_context, model_context, model_context));
}

void check_session_options(const SessionOptions& o, const Formatting& fmt, int64_t model_context) {
  check_workers(o.n_workers, o.layout, o.skeleton, fmt);
  check_field(RequestField::budget, o.budget);
  for (int64_t s : o.snapshots) check_field(RequestField::snapshot, s);
  check_field(RequestField::collab_every, o.collab_every);
  check_max_context(o.max_context, model_context);
  check_field(RequestField::max_tokens, o.max_tokens_per_worker);
  check_kv_budget(o.kv.budget, o.layout, o.skeleton);
  if (o.kv.chunk < 1 || o.kv.recent < 0 || o.kv.window < 1)
    throw RequestError(RequestField::kv_chunk,
                       fmt::format("kv budget: chunk {} (>= 1), recent {} (>= 0) and window {} "
                                   "(>= 1) are out of range",
                                   o.kv.chunk, o.kv.recent, o.kv.window));
}

void check_kv_chunk(int64_t kv_chunk, int64_t kv_budget) {
  check_field(RequestField::kv_chunk, kv_chunk);
  if (kv_chunk > 0 && kv_budget == 0)
    throw RequestError(RequestField::kv_chunk,
                       fmt::format("kv_chunk is {}, but there is no kv_budget: chunks are what a "
                                   "budget forgets; give a kv_budget, or drop kv_chunk",
                                   kv_chunk));
}

void check_kv_budget(int64_t kv_budget, Layout layout, bool skeleton) {
  check_field(RequestField::kv_budget, kv_budget);
  if (kv_budget > 0 && (skeleton || (layout != Layout::combined && layout != Layout::interleaved)))
    throw RequestError(
        RequestField::kv_budget,
        fmt::format("kv_budget is {}, but the {} layout{} never moves steps into the shared "
                    "history, so there is nothing to forget; use the combined or interleaved "
                    "layout, or kv_budget 0",
                    kv_budget, layout_name(layout), skeleton ? " with Skeleton-of-Thought" : ""));
}

void check_kv_budget_fits(int64_t kv_budget, int64_t prompt_tokens, int64_t recent) {
  if (kv_budget > 0 && kv_budget < prompt_tokens + recent)
    throw RequestError(
        RequestField::kv_budget,
        fmt::format("kv_budget is {}, but the prompt ({} tokens) and the history's last {} tokens "
                    "are never forgotten; give at least {} tokens, or 0 for no budget",
                    kv_budget, prompt_tokens, recent, prompt_tokens + recent));
}

}  // namespace hogwild
