// The KV estimate of a hogwild run (kv_budget.h).
#include "hogwild/kv_budget.h"

#include <algorithm>
#include <climits>

#include "hogwild/forgetting.h"

namespace hogwild {

namespace {
constexpr int64_t kCap = INT64_MAX / 4;
// a * b and a + b saturating at kCap (operands in [0, kCap]), and v into [0, kCap].
int64_t mul(int64_t a, int64_t b) { return a == 0 || b <= kCap / a ? a * b : kCap; }
int64_t add(int64_t a, int64_t b) { return std::min(kCap, a + b); }
int64_t clamp(int64_t v) { return std::clamp<int64_t>(v, 0, kCap); }
}  // namespace

int64_t run_kv_tokens(const KvNeed& n) {
  const int64_t w = std::max(1, n.n_workers);
  int64_t views = n.context > 0 ? std::min(n.context, kCap) : kCap;
  const int64_t budget = clamp(n.budget);
  const bool budget_bounds = budget > 0 && budget < kCap;
  // What the workers feed in the budget's serial steps, and the collaboration questions of the
  // run (per worker in the independent layout, where each counts its own tokens).
  const int64_t per_worker = mul(budget, add(1, clamp(n.opening_tokens)));
  const int64_t reopening = n.skeleton ? 1 : w;
  const int64_t fed =
      add(add(mul(reopening, per_worker), mul(w - reopening, budget)), clamp(n.once_tokens));
  auto questions = [&](int64_t workers) {
    if (n.collab_every <= 0 || n.check_tokens <= 0) return int64_t{0};
    return mul(mul(add(budget, 1), workers) / n.collab_every, clamp(n.check_tokens));
  };
  if (n.independent) {  // w outputs that do not see each other, each with its own finisher
    const int64_t own = std::max<int64_t>(0, std::min(views, kCap / w) - clamp(n.prompt_tokens));
    int64_t outputs = mul(w, own);
    if (budget_bounds) outputs = std::min(outputs, add(fed, mul(w, questions(1))));
    views = add(clamp(n.prompt_tokens), add(outputs, mul(w, clamp(n.finisher_max_tokens))));
  } else if (budget_bounds) {
    views = std::min(views, add(clamp(n.prompt_tokens), add(fed, questions(w))));
  }
  if (n.kv_budget > 0 && !n.independent && n.kv_budget < kCap && n.step_tokens < kCap / (2 * w)) {
    const int64_t history = (history_page_cap(n.kv_budget, kKvPageTokens) + 1) * kKvPageTokens;
    views = std::min(views, history + 2 * w * std::max<int64_t>(n.step_tokens, 0));
  }
  const int64_t live_blocks = 3 * w + 4;
  return views + n.finisher_max_tokens + kKvPageTokens * live_blocks + kConstTokensPerWorker * w;
}

}  // namespace hogwild
