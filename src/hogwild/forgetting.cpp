// Choosing what the shared history forgets (forgetting.h).
#include "hogwild/forgetting.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace hogwild {

std::string_view kv_policy_name(KvPolicy p) {
  return p == KvPolicy::summarise ? "summarise" : "evict";
}

std::optional<KvPolicy> parse_kv_policy(std::string_view name) {
  if (name == "evict") return KvPolicy::evict;
  if (name == "summarise" || name == "summarize") return KvPolicy::summarise;
  return std::nullopt;
}

int64_t summary_trigger(int64_t budget, int n_workers, int64_t summary_tokens) {
  return std::max<int64_t>(0,
                           budget - std::max(1, n_workers) * std::max<int64_t>(0, summary_tokens));
}

std::vector<TokenRange> summarised_ranges(int64_t head, int64_t summary_begin,
                                          const std::vector<TokenRange>& keep,
                                          const std::vector<TokenRange>& gaps) {
  if (summary_begin <= head) return {};
  std::vector<TokenRange> skip = gaps;
  skip.insert(skip.end(), keep.begin(), keep.end());
  return outside_ranges({{head, summary_begin}}, merge_ranges(std::move(skip)));
}

void ScoreWindow::push(std::vector<float> scores) {
  steps_.push_back(std::move(scores));
  while (static_cast<int64_t>(steps_.size()) > std::max<int64_t>(window_, 1)) steps_.pop_front();
}

std::vector<float> ScoreWindow::max_scores(int64_t len) const {
  std::vector<float> out(static_cast<size_t>(len), 0.0f);
  int64_t seen = 0;  // tokens measured by at least one forward of the window
  for (const auto& s : steps_) {
    const int64_t n = std::min<int64_t>(len, static_cast<int64_t>(s.size()));
    for (int64_t j = 0; j < n; ++j) out[j] = std::max(out[j], s[j]);
    seen = std::max(seen, n);
  }
  for (int64_t j = seen; j < len; ++j) out[j] = std::numeric_limits<float>::infinity();
  return out;
}

int64_t kept_tokens(int64_t len, const std::vector<TokenRange>& gaps) {
  int64_t n = len;
  for (const auto& [b, e] : gaps) n -= std::min(e, len) - std::min(b, len);
  return n;
}

namespace {

int64_t overlap(const TokenRange& a, const TokenRange& b) {
  return std::max<int64_t>(0, std::min(a.second, b.second) - std::max(a.first, b.first));
}

// The largest score of the chunk's tokens outside the gaps (it keeps at least one).
float chunk_importance(const ForgetCandidate& c, int64_t chunk, const std::vector<TokenRange>& gaps,
                       const std::vector<float>& score) {
  if (c.kept == chunk)  // no gap inside: every token counts
    return *std::max_element(score.begin() + c.begin, score.begin() + c.begin + chunk);
  float s = 0;
  bool any = false;
  for (int64_t j = c.begin; j < c.begin + chunk; ++j) {
    if (std::any_of(gaps.begin(), gaps.end(),
                    [&](const TokenRange& g) { return j >= g.first && j < g.second; }))
      continue;
    s = any ? std::max(s, score[j]) : score[j];
    any = true;
  }
  return s;
}

// (x - min) / (max - min) over the finite values (0 when they are all equal); infinities stay.
std::vector<float> min_max(const std::vector<float>& x) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : x)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = !std::isfinite(x[i]) ? x[i] : hi > lo ? (x[i] - lo) / (hi - lo) : 0.0f;
  return out;
}

}  // namespace

std::vector<ForgetCandidate> forget_candidates(int64_t len, const std::vector<TokenRange>& gaps,
                                               const std::vector<TokenRange>& protect,
                                               const ForgetPolicy& policy) {
  if (policy.chunk < 1) fail("kv budget: the forgetting chunk must be at least 1 token");
  std::vector<ForgetCandidate> cand;
  const int64_t limit = len - std::max<int64_t>(0, policy.recent);  // chunks end at or before it
  for (int64_t b = 0; b + policy.chunk <= limit; b += policy.chunk) {
    const TokenRange c{b, b + policy.chunk};
    if (std::any_of(protect.begin(), protect.end(),
                    [&](const TokenRange& p) { return overlap(c, p) > 0; }))
      continue;
    int64_t k = policy.chunk;
    for (const auto& g : gaps) k -= overlap(c, g);
    if (k > 0) cand.push_back({b, k});
  }
  return cand;
}

std::vector<float> combined_scores(const std::vector<float>& importance,
                                   const std::vector<float>& redundancy, double weight) {
  if (importance.size() != redundancy.size())
    fail("kv budget: {} importance scores but {} redundancy scores", importance.size(),
         redundancy.size());
  const std::vector<float> imp = min_max(importance), red = min_max(redundancy);
  const float w = static_cast<float>(weight);
  std::vector<float> out(imp.size());
  for (size_t i = 0; i < imp.size(); ++i)
    out[i] = std::isinf(imp[i]) ? imp[i] : (1.0f - w) * imp[i] - w * red[i];
  return out;
}

std::vector<TokenRange> choose_forgotten(int64_t len, const std::vector<TokenRange>& gaps,
                                         const std::vector<TokenRange>& protect,
                                         const std::vector<float>& score,
                                         const ForgetPolicy& policy,
                                         const std::vector<float>& redundancy) {
  if (policy.chunk < 1) fail("kv budget: the forgetting chunk must be at least 1 token");
  if (static_cast<int64_t>(score.size()) != len)
    fail("kv budget: {} scores for a history of {} tokens", score.size(), len);
  int64_t kept = kept_tokens(len, gaps);
  if (policy.budget <= 0 || kept <= policy.budget) return {};
  const std::vector<ForgetCandidate> cand = forget_candidates(len, gaps, protect, policy);
  std::vector<float> s(cand.size());
  for (size_t i = 0; i < cand.size(); ++i)
    s[i] = chunk_importance(cand[i], policy.chunk, gaps, score);
  if (policy.redundancy_weight > 0) {
    if (redundancy.size() != cand.size())
      fail("kv budget: {} redundancy scores for {} candidate chunks", redundancy.size(),
           cand.size());
    s = combined_scores(s, redundancy, policy.redundancy_weight);
  }
  std::vector<size_t> order(cand.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return s[x] < s[y]; });
  std::vector<TokenRange> out;
  for (size_t i : order) {
    if (kept <= policy.budget) break;
    out.emplace_back(cand[i].begin, cand[i].begin + policy.chunk);
    kept -= cand[i].kept;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<TokenRange> merge_ranges(std::vector<TokenRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<TokenRange> merged;
  for (const TokenRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

std::vector<TokenRange> outside_ranges(const std::vector<TokenRange>& ranges,
                                       const std::vector<TokenRange>& gaps) {
  std::vector<TokenRange> out;
  for (auto [b, e] : ranges) {
    for (const auto& [gb, ge] : gaps) {
      if (ge <= b || gb >= e) continue;
      if (gb > b) out.emplace_back(b, gb);
      b = std::max(b, ge);
      if (b >= e) break;
    }
    if (b < e) out.emplace_back(b, e);
  }
  return out;
}

int64_t history_page_cap(int64_t budget, int64_t page) { return (budget + page - 1) / page + 2; }

namespace {
// True when [b, e) lies wholly inside the gaps (sorted, disjoint, merged).
bool inside_gaps(int64_t b, int64_t e, const std::vector<TokenRange>& gaps) {
  return std::any_of(gaps.begin(), gaps.end(),
                     [&](const TokenRange& g) { return g.first <= b && e <= g.second; });
}
}  // namespace

int64_t held_pages(int64_t len, const std::vector<TokenRange>& gaps, int64_t page) {
  if (page < 1) fail("kv budget: a page holds at least 1 token");
  int64_t n = 0;
  for (int64_t b = 0; b < len; b += page)
    n += b + page <= len && inside_gaps(b, b + page, gaps) ? 0 : 1;
  return n;
}

std::vector<TokenRange> pages_over_cap(int64_t len, const std::vector<TokenRange>& gaps,
                                       int64_t head, int64_t recent, int64_t page, int64_t cap) {
  int64_t held = held_pages(len, gaps, page);
  std::vector<TokenRange> out;
  const int64_t first = (std::max<int64_t>(head, 0) + page - 1) / page;  // after the prompt's
  const int64_t tail = len - std::max<int64_t>(recent, 0);               // pages end at or before
  for (int64_t k = first; held > cap && (k + 1) * page <= tail; ++k) {
    if (inside_gaps(k * page, (k + 1) * page, gaps)) continue;
    out.emplace_back(k * page, (k + 1) * page);
    --held;
  }
  return out;
}

}  // namespace hogwild
