#include "hogwild/batch.h"

#include <chrono>

#include "core/error.h"
#include "sampling/row_draw.h"

namespace hogwild {

namespace {

// The steps' parts as one forward: tokens in step order (views renumbered), the rows sampled on
// the backend with their banned sets deduplicated by identity.
struct MergedForward {
  ForwardBatch batch;  // its draw: the rows of the steps that draw on the backend
  bool host = false;   // some step wants its logits on the host (draws there)
  bool keep = false;   // some step keeps its rows' logits (SessionStep::keep_logits)
};

MergedForward merge_steps(std::span<SessionStep*> steps, size_t n_tokens) {
  MergedForward m;
  std::vector<const std::vector<int32_t>*> set_of;  // dedupe banned sets by identity
  for (SessionStep* s : steps) {
    if (!s->rows.empty() && s->host_logits) m.host = true;
    if (!s->rows.empty() && s->keep_logits) m.keep = true;
  }
  m.batch.tokens.reserve(n_tokens);
  for (SessionStep* s : steps) {
    if (s->batch.tokens.empty()) continue;
    const int32_t shift = static_cast<int32_t>(m.batch.views.size());
    m.batch.views.insert(m.batch.views.end(), s->batch.views.begin(), s->batch.views.end());
    m.batch.score_blocks.insert(m.batch.score_blocks.end(), s->batch.score_blocks.begin(),
                                s->batch.score_blocks.end());
    for (TokenInput t : s->batch.tokens) {
      t.worker += shift;
      m.batch.tokens.push_back(t);
    }
    if (s->rows.empty() || s->host_logits) continue;
    HOGWILD_CHECK(s->sampling.size() == s->rows.size());
    int32_t set = -1;
    if (s->banned && !s->banned->empty()) {
      for (size_t i = 0; i < set_of.size(); ++i)
        if (set_of[i] == s->banned) set = static_cast<int32_t>(i);
      if (set < 0) {
        set = static_cast<int32_t>(set_of.size());
        set_of.push_back(s->banned);
        m.batch.draw.banned_sets.push_back(*s->banned);
      }
    }
    for (RowSampling r : s->sampling) {
      r.banned = r.banned >= 0 ? set : -1;
      m.batch.draw.rows.push_back(r);
    }
  }
  if (m.host)
    m.batch.draw = {};  // every row's logits come to the host, the rows are drawn there
  else
    m.batch.draw.keep_logits = m.keep;
  return m;
}

// Draws the rows of step s on the host from its logits (rows, vocab) starting at `base`.
// Throws hogwild::Error when a row has nothing to draw.
void draw_step_on_host(SessionStep& s, const float* base, int64_t vocab) {
  const size_t n = s.rows.size();
  s.drawn.resize(n);
  for (size_t r = 0; r < n; ++r) {
    std::span<const int32_t> banned;
    if (s.sampling[r].banned >= 0 && s.banned) banned = *s.banned;
    s.drawn[r] = draw_row(std::span<const float>(base + r * vocab, vocab), s.sampling[r], banned);
    if (s.drawn[r] < 0)
      fail(
          "no token can be drawn for a logits row (every logit is -inf or NaN after the "
          "banned tokens and filters)");
  }
}

// Hands each step its part of the forward's outputs: attention scores, logits, drawn ids.
void hand_out(Backend& backend, std::span<SessionStep*> steps, const MergedForward& m,
              const std::vector<float>& logits, const std::vector<int32_t>& drawn, double seconds) {
  const int64_t vocab = backend.config().vocab_size;
  size_t scored = 0;  // attention scores, in merged score_blocks order
  for (SessionStep* s : steps) {
    s->scores.clear();
    if (s->batch.tokens.empty()) continue;
    for (size_t i = 0; i < s->batch.score_blocks.size(); ++i)
      s->scores.push_back(backend.attention_scores().at(scored++));
  }
  size_t row = 0;          // logits row (host) / drawn index (device), in merged batch order
  size_t sampled_row = 0;  // index into rows / drawn (device path)
  for (SessionStep* s : steps) {
    s->forward_seconds = seconds;
    if (s->batch.tokens.empty()) continue;
    const size_t n = s->rows.size();
    if (m.host || m.keep) {  // the rows' logits are on the host
      const float* base = logits.data() + row * vocab;
      if (s->host_logits || s->keep_logits) s->logits.assign(base, base + n * vocab);
    }
    if (m.host) {
      if (!s->host_logits) draw_step_on_host(*s, logits.data() + row * vocab, vocab);
    } else {
      s->drawn.assign(drawn.begin() + sampled_row, drawn.begin() + sampled_row + n);
      sampled_row += n;
    }
    row += n;
  }
}

}  // namespace

void run_forward(Backend& backend, std::span<SessionStep*> steps) {
  size_t n_tokens = 0;
  for (SessionStep* s : steps) n_tokens += s->batch.tokens.size();
  if (n_tokens == 0) return;
  const MergedForward m = merge_steps(steps, n_tokens);
  const auto t0 = std::chrono::steady_clock::now();
  ForwardResult out;
  backend.forward(m.batch, out);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  hand_out(backend, steps, m, out.logits, out.tokens, seconds);
}

}  // namespace hogwild
