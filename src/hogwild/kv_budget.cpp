// The KV estimate of a hogwild run (kv_budget.h).
#include "hogwild/kv_budget.h"

#include <algorithm>
#include <climits>

namespace hogwild {

int64_t run_kv_tokens(const KvNeed& n) {
  constexpr int64_t kCap = INT64_MAX / 4;
  const int64_t w = std::max(1, n.n_workers);
  int64_t views = n.context > 0 ? std::min(n.context, kCap) : kCap;
  if (n.budget > 0 && n.budget < kCap / w - kOpeningTokensPerWorker)
    views = std::min(views, n.prompt_tokens + w * (n.budget + kOpeningTokensPerWorker));
  const int64_t live_blocks = 3 * w + 4;
  return views + n.finisher_max_tokens + kKvPageTokens * live_blocks + kConstTokensPerWorker * w;
}

}  // namespace hogwild
