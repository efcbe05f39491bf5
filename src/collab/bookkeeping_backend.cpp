// BookkeepingBackend (bookkeeping_backend.h).
#include "collab/bookkeeping_backend.h"

#include <algorithm>

#include "core/error.h"
#include "kv/forward_plan.h"
#include "sampling/row_draw.h"

namespace hogwild::collab {

BookkeepingBackend::BookkeepingBackend(int64_t vocab_size, int64_t max_position_embeddings) {
  if (vocab_size <= 0) fail("vocab_size must be positive, got {}", vocab_size);
  config_.vocab_size = vocab_size;
  config_.max_position_embeddings = max_position_embeddings;
}

BlockId BookkeepingBackend::new_block() { return table_.new_block(); }

void BookkeepingBackend::free_block(BlockId b) { table_.free_block(b); }

int64_t BookkeepingBackend::block_len(BlockId b) const { return table_.len(b); }

void BookkeepingBackend::truncate_block(BlockId b, int64_t new_len) { table_.truncate(b, new_len); }

void BookkeepingBackend::append_block(BlockId dst, BlockId src) {
  table_.check_append(dst, src);
  table_.grow(dst, table_.len(dst) + table_.len(src));
}

void BookkeepingBackend::read_block(BlockId, int64_t, std::vector<float>&,
                                    std::vector<float>&) const {
  fail("the bookkeeping backend keeps no keys or values");
}

void BookkeepingBackend::forward(const ForwardBatch& batch, ForwardResult& out) {
  check_row_sampling(batch);
  const ForwardPlan plan = plan_forward(batch, table_, config_, /*max_positions=*/0);
  apply_appends(plan, table_);
  out.logits.assign(static_cast<size_t>(plan.logit_rows * config_.vocab_size), 0.0f);
  draw_on_host(batch, config_.vocab_size, out);
}

}  // namespace hogwild::collab
