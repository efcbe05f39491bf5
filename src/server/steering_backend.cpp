#include "server/steering_backend.h"

#include <algorithm>

namespace hogwild::server {

void SteeringBackend::begin_session(int64_t max_context,
                                    std::function<void(bool, int64_t)> on_note) {
  live_.clear();
  history_ = -1;
  max_context_ = max_context;
  pending_.clear();
  on_note_ = std::move(on_note);
}

void SteeringBackend::end_session() {
  for (BlockId b : live_) in_.free_block(b);
  live_.clear();
  history_ = -1;
  for (auto& p : pending_)  // queued after the last forward: never inserted
    if (on_note_) on_note_(false, static_cast<int64_t>(p.size()));
  pending_.clear();
  on_note_ = nullptr;
}

int64_t SteeringBackend::cached_tokens() const {
  int64_t n = 0;
  for (BlockId b : live_) n += in_.block_len(b);
  return n;
}

BlockId SteeringBackend::new_block() {
  const BlockId b = in_.new_block();
  live_.insert(b);
  return b;
}

void SteeringBackend::free_block(BlockId b) {
  in_.free_block(b);
  live_.erase(b);
}

void SteeringBackend::insert_pending(const ForwardBatch& next) {
  if (history_ < 0 || pending_.empty()) return;
  // The longest view of `next` once it is run, as Session measures it against max_context.
  int64_t longest = 0;
  for (const auto& v : next.views) {
    int64_t len = 0;
    for (BlockId b : v) {
      len += in_.block_len(b);
      for (const auto& t : next.tokens) len += t.block == b;
    }
    longest = std::max(longest, len);
  }
  for (auto& ids : pending_) {
    const auto n = static_cast<int64_t>(ids.size());
    if (ids.empty() || (max_context_ > 0 && longest + n > max_context_)) {
      if (on_note_) on_note_(false, n);
      continue;
    }
    ForwardBatch nb;
    nb.views.push_back({history_});
    for (size_t i = 0; i < ids.size(); ++i)
      nb.tokens.push_back({ids[i], 0, history_, i + 1 == ids.size()});
    in_.forward(nb, scratch_);
    longest += n;
    if (on_note_) on_note_(true, n);
  }
  pending_.clear();
}

void SteeringBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  insert_pending(batch);
  in_.forward(batch, logits);
  if (history_ < 0 && !batch.views.empty() && !batch.views[0].empty())
    history_ = batch.views[0][0];
}

void SteeringBackend::forward_sample(const ForwardBatch& batch, const std::vector<int32_t>& banned,
                                     const std::vector<RowSampling>& rows,
                                     std::vector<int32_t>& tokens) {
  insert_pending(batch);
  in_.forward_sample(batch, banned, rows, tokens);
  if (history_ < 0 && !batch.views.empty() && !batch.views[0].empty())
    history_ = batch.views[0][0];
}

}  // namespace hogwild::server
