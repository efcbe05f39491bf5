#include "sampling/row_draw.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sampling/sampler.h"

namespace hogwild {

int32_t draw_row(std::span<const float> logits, const RowSampling& r,
                 std::span<const int32_t> banned) {
  std::vector<float> l(logits.begin(), logits.end());
  for (int32_t id : banned)
    if (id >= 0 && id < static_cast<int64_t>(l.size()))
      l[id] = -std::numeric_limits<float>::infinity();
  SamplingParams p;
  p.do_sample = r.temperature > 0;
  p.temperature = r.temperature > 0 ? r.temperature : 0.0f;
  p.top_k = r.top_k;
  p.top_p = r.top_p >= 1.0f ? 1.0f : r.top_p;
  p.min_p = r.min_p;
  Sampler(p).process(l, {});
  if (l.empty()) return -1;
  const auto best = std::max_element(l.begin(), l.end());
  if (std::isinf(*best) || std::isnan(*best)) return -1;
  if (!p.do_sample) return static_cast<int32_t>(best - l.begin());
  double sum = 0;
  for (float x : l) sum += std::exp(double(x) - *best);
  const double target = double(r.u) * sum;
  double cum = 0;
  int32_t pick = -1;
  for (size_t i = 0; i < l.size(); ++i) {
    if (std::isinf(l[i])) continue;
    cum += std::exp(double(l[i]) - *best);
    pick = static_cast<int32_t>(i);
    if (target < cum) break;
  }
  return pick;
}

void check_row_sampling(const ForwardBatch& batch) {
  const std::vector<RowSampling>& rows = batch.draw.rows;
  const std::vector<std::vector<int32_t>>& banned_sets = batch.draw.banned_sets;
  if (rows.empty()) return;
  int64_t want = 0;
  for (const TokenInput& t : batch.tokens) want += t.want_logits ? 1 : 0;
  if (static_cast<int64_t>(rows.size()) != want)
    fail("forward: {} sampling rows for {} tokens that want logits; give one per row", rows.size(),
         want);
  for (const RowSampling& r : rows) {
    if (!(r.u >= 0.0f && r.u < 1.0f) || std::isnan(r.temperature) || r.top_k < 0 ||
        !(r.top_p > 0.0f) || !(r.min_p >= 0.0f && r.min_p <= 1.0f))
      fail("forward: bad sampling row (u {}, temperature {}, top_k {}, top_p {}, min_p {})", r.u,
           r.temperature, r.top_k, r.top_p, r.min_p);
    if (r.banned < -1 || r.banned >= static_cast<int32_t>(banned_sets.size()))
      fail("forward: a row names banned set {} of {}; use -1 (none) or an index below {}", r.banned,
           banned_sets.size(), banned_sets.size());
  }
}

void draw_on_host(const ForwardBatch& batch, int64_t vocab_size, ForwardResult& out) {
  const ForwardDraw& d = batch.draw;
  out.tokens.clear();
  if (d.rows.empty()) return;
  HOGWILD_CHECK(static_cast<int64_t>(out.logits.size()) ==
                static_cast<int64_t>(d.rows.size()) * vocab_size);
  out.tokens.assign(d.rows.size(), -1);
  for (size_t r = 0; r < d.rows.size(); ++r) {
    std::span<const int32_t> banned;
    if (d.rows[r].banned >= 0) banned = d.banned_sets[d.rows[r].banned];
    out.tokens[r] = draw_row(std::span<const float>(out.logits.data() + r * vocab_size, vocab_size),
                             d.rows[r], banned);
    if (out.tokens[r] < 0)
      fail(
          "no token can be drawn for logits row {} (every logit is -inf or NaN after the banned "
          "tokens and filters)",
          r);
  }
  if (!d.keep_logits) out.logits.clear();
}

}  // namespace hogwild
