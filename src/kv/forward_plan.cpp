#include "kv/forward_plan.h"

#include <algorithm>

#include "core/error.h"

namespace hogwild {

int64_t ForwardPlan::new_len(BlockId b, const BlockTable& table) const {
  for (const auto& [g, len] : grown)
    if (g == b) return len;
  return table.len(b);
}

const std::vector<std::pair<int64_t, int64_t>>* ForwardPlan::gaps_of(BlockId b) const {
  for (const auto& [g, ranges] : gaps)
    if (g == b) return &ranges;
  return nullptr;
}

ForwardPlan plan_forward(const ForwardBatch& batch, const BlockTable& table,
                         const ModelConfig& config, int64_t max_positions) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_views = static_cast<int64_t>(batch.views.size());
  for (const auto& view : batch.views)
    for (BlockId b : view) table.check(b, "forward (view)");
  ForwardPlan plan;
  plan.index.resize(T);
  plan.position.resize(T);
  // Block-local indices, in batch order.
  auto grown_at = [&](BlockId b) -> int64_t& {
    for (auto& [g, len] : plan.grown)
      if (g == b) return len;
    plan.grown.emplace_back(b, table.len(b));
    return plan.grown.back().second;
  };
  for (int64_t t = 0; t < T; ++t) {
    const TokenInput& in = batch.tokens[t];
    if (in.worker < 0 || in.worker >= n_views)
      fail("forward: row {} names worker {} but the batch has {} views", t, in.worker, n_views);
    if (in.token_id < 0 || in.token_id >= config.vocab_size)
      fail("forward: token id {} (row {}) is outside the vocabulary [0, {})", in.token_id, t,
           config.vocab_size);
    table.check(in.block, "forward (target block)");
    const auto& view = batch.views[in.worker];
    if (std::find(view.begin(), view.end(), in.block) == view.end())
      fail("forward: row {} writes block {} which is not in worker {}'s view", t, in.block,
           in.worker);
    plan.index[t] = grown_at(in.block)++;
    plan.logit_rows += in.want_logits ? 1 : 0;
  }
  for (const auto& [b, len] : plan.grown) plan.new_pages += table.pages_to_grow(b, len);
  if (plan.new_pages > table.free_pages())
    fail(
        "KV cache full: this forward needs {} more pages of {} tokens, {} are free; use fewer "
        "workers or a shorter context",
        plan.new_pages, table.page_tokens(), table.free_pages());
  // Offsets with post-append lengths; positions from the last occurrence of the target block.
  plan.views.resize(n_views);
  for (int64_t w = 0; w < n_views; ++w) {
    int64_t off = 0;
    for (BlockId b : batch.views[w]) {
      plan.views[w].push_back({b, off});
      off += plan.new_len(b, table);
      if (!table.gaps(b).empty() && !plan.gaps_of(b)) plan.gaps.emplace_back(b, table.gaps(b));
    }
  }
  for (BlockId b : batch.score_blocks) table.check(b, "forward (score block)");
  for (int64_t t = 0; t < T; ++t) {
    const TokenInput& in = batch.tokens[t];
    int64_t last = 0;
    for (const ViewOccurrence& oc : plan.views[in.worker])
      if (oc.block == in.block) last = oc.offset;
    plan.position[t] = last + plan.index[t];
    plan.max_position = std::max(plan.max_position, plan.position[t]);
  }
  if (max_positions > 0 && plan.max_position >= max_positions)
    fail(
        "forward: view position {} exceeds the RoPE table of {} positions (max_position_"
        "embeddings); use a shorter context",
        plan.max_position, max_positions);
  // Sliding-window attention is not implemented: refuse views where it would change the result
  // (a query at p sees keys back to p - (sliding_window - 1) in HF's mask).
  if (config.sliding_window > 0 && plan.max_position >= config.sliding_window)
    fail(
        "forward: view position {} is beyond the model's sliding_window ({} tokens), which this "
        "engine does not implement; keep the context under {} tokens",
        plan.max_position, config.sliding_window, config.sliding_window);
  return plan;
}

void apply_appends(const ForwardPlan& plan, BlockTable& table) {
  for (const auto& [b, len] : plan.grown) table.grow(b, len);
}

}  // namespace hogwild
