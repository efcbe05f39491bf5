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

void check_row_sampling(const ForwardBatch& batch,
                        const std::vector<std::vector<int32_t>>& banned_sets,
                        const std::vector<RowSampling>& rows) {
  int64_t want = 0;
  for (const TokenInput& t : batch.tokens) want += t.want_logits ? 1 : 0;
  if (static_cast<int64_t>(rows.size()) != want)
    fail("forward_sample: {} sampling rows for {} tokens that want logits; give one per row",
         rows.size(), want);
  for (const RowSampling& r : rows) {
    if (!(r.u >= 0.0f && r.u < 1.0f) || std::isnan(r.temperature) || r.top_k < 0 ||
        !(r.top_p > 0.0f) || !(r.min_p >= 0.0f && r.min_p <= 1.0f))
      fail("forward_sample: bad sampling row (u {}, temperature {}, top_k {}, top_p {}, min_p {})",
           r.u, r.temperature, r.top_k, r.top_p, r.min_p);
    if (r.banned < -1 || r.banned >= static_cast<int32_t>(banned_sets.size()))
      fail("forward_sample: a row names banned set {} of {}; use -1 (none) or an index below {}",
           r.banned, banned_sets.size(), banned_sets.size());
  }
}

void forward_sample_on_host(Backend& backend, const ForwardBatch& batch,
                            const std::vector<std::vector<int32_t>>& banned_sets,
                            const std::vector<RowSampling>& rows, std::vector<int32_t>& tokens,
                            std::vector<float>* kept) {
  check_row_sampling(batch, banned_sets, rows);
  std::vector<float> own;
  std::vector<float>& logits = kept ? *kept : own;
  backend.forward(batch, logits);
  const int64_t vocab = backend.config().vocab_size;
  tokens.assign(rows.size(), -1);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::span<const int32_t> banned;
    if (rows[r].banned >= 0) banned = banned_sets[rows[r].banned];
    tokens[r] = draw_row(std::span<const float>(logits.data() + r * vocab, vocab), rows[r], banned);
    if (tokens[r] < 0)
      fail(
          "no token can be drawn for logits row {} (every logit is -inf or NaN after the banned "
          "tokens and filters)",
          r);
  }
}

}  // namespace hogwild
