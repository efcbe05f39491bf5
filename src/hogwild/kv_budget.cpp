// The KV estimate of a hogwild run (kv_budget.h).
#include "hogwild/kv_budget.h"

#include <algorithm>
#include <climits>

#include "hogwild/forgetting.h"

namespace hogwild {

int64_t run_kv_tokens(const KvNeed& n) {
  constexpr int64_t kCap = INT64_MAX / 4;
  const int64_t w = std::max(1, n.n_workers);
  int64_t views = n.context > 0 ? std::min(n.context, kCap) : kCap;
  const bool budget_bounds = n.budget > 0 && n.budget < kCap / w - kOpeningTokensPerWorker;
  if (budget_bounds)
    views = std::min(views, n.prompt_tokens + w * (n.budget + kOpeningTokensPerWorker));
  if (n.independent) {  // w outputs that do not see each other, each with its own finisher
    int64_t per = std::max<int64_t>(0, std::min<int64_t>(views, kCap / w) - n.prompt_tokens);
    if (budget_bounds) per = std::min(per, n.budget + kOpeningTokensPerWorker);
    views = n.prompt_tokens + w * (per + n.finisher_max_tokens);
  }
  if (n.kv_budget > 0 && !n.independent && n.kv_budget < kCap && n.step_tokens < kCap / (2 * w)) {
    const int64_t history = (history_page_cap(n.kv_budget, kKvPageTokens) + 1) * kKvPageTokens;
    views = std::min(views, history + 2 * w * std::max<int64_t>(n.step_tokens, 0));
  }
  const int64_t live_blocks = 3 * w + 4;
  return views + n.finisher_max_tokens + kKvPageTokens * live_blocks + kConstTokensPerWorker * w;
}

}  // namespace hogwild
