// A Backend that only keeps the books: block ids and lengths, no weights and no arithmetic. Its
// forward returns zero logits. It drives a real Session (src/hogwild/session.h) whose tokens come
// from a TokenPicker that ignores the logits (the scripted workers of oracle_picker.h), so traces
// are made by the engine's own layouts, steps, promotions and collaboration checks at the speed of
// the bookkeeping alone.
#pragma once

#include <vector>

#include "model/backend.h"

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
  /// Appends every token to its block (checking the block is live and occurs in its writer's
  /// view); logits = (rows with want_logits, vocab_size) zeros.
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

 private:
  void check_live(BlockId b) const;
  ModelConfig config_;
  std::vector<int64_t> len_;  // by BlockId; -1 = free
};

}  // namespace hogwild::collab
