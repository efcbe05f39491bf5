// BookkeepingBackend (bookkeeping_backend.h).
#include "collab/bookkeeping_backend.h"

#include <algorithm>

#include "core/error.h"

namespace hogwild::collab {

BookkeepingBackend::BookkeepingBackend(int64_t vocab_size, int64_t max_position_embeddings) {
  if (vocab_size <= 0) fail("vocab_size must be positive, got {}", vocab_size);
  config_.vocab_size = vocab_size;
  config_.max_position_embeddings = max_position_embeddings;
}

void BookkeepingBackend::check_live(BlockId b) const {
  if (b < 0 || static_cast<size_t>(b) >= len_.size() || len_[b] < 0)
    fail("cache block {} is not live", b);
}

BlockId BookkeepingBackend::new_block() {
  auto it = std::find(len_.begin(), len_.end(), -1);
  if (it != len_.end()) {
    *it = 0;
    return static_cast<BlockId>(it - len_.begin());
  }
  len_.push_back(0);
  return static_cast<BlockId>(len_.size() - 1);
}

void BookkeepingBackend::free_block(BlockId b) {
  check_live(b);
  len_[b] = -1;
}

int64_t BookkeepingBackend::block_len(BlockId b) const {
  check_live(b);
  return len_[b];
}

void BookkeepingBackend::truncate_block(BlockId b, int64_t new_len) {
  check_live(b);
  if (new_len < 0 || new_len > len_[b])
    fail("cannot truncate block {} of {} tokens to {}", b, len_[b], new_len);
  len_[b] = new_len;
}

void BookkeepingBackend::append_block(BlockId dst, BlockId src) {
  check_live(dst);
  check_live(src);
  len_[dst] += len_[src];
}

void BookkeepingBackend::read_block(BlockId, int64_t, std::vector<float>&,
                                    std::vector<float>&) const {
  fail("the bookkeeping backend keeps no keys or values");
}

void BookkeepingBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  int64_t rows = 0;
  for (const TokenInput& t : batch.tokens) {
    if (t.token_id < 0 || t.token_id >= config_.vocab_size)
      fail("token id {} is outside the vocabulary of {}", t.token_id, config_.vocab_size);
    if (t.worker < 0 || static_cast<size_t>(t.worker) >= batch.views.size())
      fail("token of writer {} has no view", t.worker);
    const auto& view = batch.views[t.worker];
    if (std::find(view.begin(), view.end(), t.block) == view.end())
      fail("block {} is not in the view of its writer {}", t.block, t.worker);
    check_live(t.block);
    len_[t.block] += 1;
    rows += t.want_logits;
  }
  logits.assign(static_cast<size_t>(rows * config_.vocab_size), 0.0f);
}

}  // namespace hogwild::collab
