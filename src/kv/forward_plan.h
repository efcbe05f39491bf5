// The backend-neutral plan of one forward (docs/ARCHITECTURE.md §2): the batch checked against
// the block table and the model, and the view -> position rule applied once. Both backends run
// plan_forward first and read their positions and offsets from it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/backend.h"
#include "kv/block_table.h"
#include "model/config.h"

namespace hogwild {

/// One block occurrence in a view, at its offset after this forward's appends.
struct ViewOccurrence {
  BlockId block = -1;
  int64_t offset = 0;  // view position of the block's key 0
};

struct ForwardPlan {
  std::vector<int64_t> index;     // (T) block-local index each token is written at
  std::vector<int64_t> position;  // (T) view position p of each token in its writer's view
  std::vector<std::vector<ViewOccurrence>> views;  // (n_views) occurrences in view order
  // Blocks this forward appends to, in order of their first token: (block, length after it).
  std::vector<std::pair<BlockId, int64_t>> grown;
  int64_t max_position = -1;  // largest position of a fed token (-1 for an empty batch)
  int64_t logit_rows = 0;     // tokens with want_logits
  int64_t new_pages = 0;      // pages the appends take from the pool
  // Forgotten key ranges [begin, end) (block-local, sorted) of every block in a view that has
  // any (BlockTable::gaps): attention skips them; offsets and positions count them as usual.
  std::vector<std::pair<BlockId, std::vector<std::pair<int64_t, int64_t>>>> gaps;

  /// The forgotten ranges of block b, or nullptr when it has none.
  const std::vector<std::pair<int64_t, int64_t>>* gaps_of(BlockId b) const;

  /// Length of block b after this forward (its table length when it is not appended to).
  int64_t new_len(BlockId b, const BlockTable& table) const;
};

/// Checks the batch and plans it. Throws hogwild::Error, before anything changes, when a view
/// names a block that does not exist, a token names a writer with no view, a token id is outside
/// [0, vocab_size), a target block is not live or does not occur in its writer's view, the appends
/// need more pages than are free ("KV cache full"), or a position reaches max_positions (> 0; the
/// RoPE table) or the model's sliding_window (not implemented).
/// Gaps (forgotten tokens, BlockTable::gaps) are copied into the plan; they change no offset.
/// Rule: p = offset of the LAST occurrence of the target block in the writer's view + the
/// token's block-local index; offsets use post-append lengths.
ForwardPlan plan_forward(const ForwardBatch& batch, const BlockTable& table,
                         const ModelConfig& config, int64_t max_positions);

/// Applies the plan's appends to the table (BlockTable::grow for every grown block).
void apply_appends(const ForwardPlan& plan, BlockTable& table);

}  // namespace hogwild
