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
}

}  // namespace hogwild
