// A Backend that only keeps the books: block ids and lengths, no weights and no arithmetic. Its
// forward returns zero logits. It drives a real Session (src/hogwild/session.h) whose tokens come
// from a TokenPicker that ignores the logits (the scripted workers of oracle_picker.h), so traces
// are made by the engine's own layouts, steps, promotions and collaboration checks at the speed of
// the bookkeeping alone.
#pragma once

#include <vector>

#include "kv/backend.h"
#include "kv/block_table.h"

namespace hogwild::collab {

class BookkeepingBackend : public Backend {
 public:
  /// vocab_size: width of the (zero) logits rows; max_position_embeddings: the context limit the
  /// session checks views against.
  BookkeepingBackend(int64_t vocab_size, int64_t max_position_embeddings);

  const ModelConfig& config() const override { return config_; }
  BlockId new_block() override;
  void free_block(BlockId b) override;
  int64_t block_len(BlockId b) const override;
  void truncate_block(BlockId b, int64_t new_len) override;
  void append_block(BlockId dst, BlockId src) override;
  /// No keys or values are kept: throws hogwild::Error.
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override;
  using Backend::forward;
  /// Checks the batch and appends every token to its block (kv/forward_plan.h, as every
  /// backend does); logits = (rows with want_logits, vocab_size) zeros, and a draw is the host
  /// draw (sampling/row_draw.h) over them.
  void forward(const ForwardBatch& batch, ForwardResult& out) override;
  int64_t kv_used_tokens() const override { return table_.used_pages() * table_.page_tokens(); }
  int64_t live_blocks() const override { return table_.live_blocks(); }

 private:
  ModelConfig config_;
  BlockTable table_{0, 64};  // blocks and lengths, no limit
};

}  // namespace hogwild::collab
