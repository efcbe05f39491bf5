// Host-side planning of one hogwild attention launch (attention.h): which block chunks exist,
// which (query row, block occurrence) pairs see each chunk, and where each row's partial states
// land. The plan depends only on the batch layout (views, block lengths, view positions), not on
// the layer, so one plan serves every layer of a forward.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/attention.h"
#include "cuda/attention_scores.h"

namespace hogwild::cuda {

/// One block occurrence in a worker's view.
struct PlanOccurrence {
  int32_t block;   // index into PlanInput::blocks
  int64_t offset;  // view position of the block's key 0 (sum of lengths before it)
};

struct PlanBlock {
  int64_t len = 0;  // tokens in the block (after this forward's appends)
  const std::vector<int32_t>* pages = nullptr;  // its pages, ceil(len / kPageTokens) of them
  int64_t fresh_from = INT64_MAX;  // first key this forward appends (AttnItem::fresh_from)
  int64_t fresh_row = -1;          // batch token of key fresh_from (AttnItem::fresh_row)
  // Forgotten key ranges [begin, end) (sorted, disjoint, below fresh_from; ForwardPlan::gaps_of),
  // null when none: no item covers them (docs/ARCHITECTURE.md "Bounded shared memory").
  const std::vector<std::pair<int64_t, int64_t>>* gaps = nullptr;
};

struct PlanInput {
  std::vector<PlanBlock> blocks;
  std::vector<std::vector<PlanOccurrence>> views;  // views[worker]
  std::vector<int32_t> row_worker;                 // (n_rows) writer of each query row
  std::vector<int64_t> row_pos;                    // (n_rows) view position p of each row
  int32_t group = 1;                               // G = heads per KV head
  int32_t kv_heads = 0;                            // num_key_value_heads (>= 1)
  // CTAs of the partial kernel that run at once (one per SM), 0 = unknown. Several KV heads of a
  // one-tile item share a unit (AttnUnit) only while the units outnumber this: when all fit in one
  // wave, a unit per head finishes sooner.
  int32_t resident_ctas = 0;
  int32_t chunk = kPageTokens;  // keys per chunk, multiple of kPageTokens
  // For the fused append (AttnAppend): a chunk also starts at the tile holding each block's
  // fresh_from, so an item's new keys lie in its first kAttnFreshTiles tiles (build_plan throws
  // if a block appends more keys than fit there).
  bool split_fresh = false;
};

/// The plan of rows [row_begin, row_end) as host arrays (row indices stay batch-global; rows
/// outside the range get no entries).
struct HostPlan {
  std::vector<AttnItem> items;
  std::vector<AttnUnit> units;  // CTAs of the partial kernel, item by item (AttnUnit)
  std::vector<int32_t> pages;
  std::vector<AttnPair> pairs;
  std::vector<int32_t> row_entry_ptr;  // (n_rows + 1)
  std::vector<int32_t> row_entries;
  int32_t n_entries = 0;
};

/// Chunk length for a batch: about `target_ctas` CTAs over total_keys keys of num_key_value_heads
/// heads, at least one page; larger when there are many query rows (prefill), which already fill
/// the GPU.
int32_t choose_chunk(int64_t total_keys, int64_t n_rows, int32_t num_key_value_heads,
                     int32_t target_ctas);

/// Number of partial entries each row needs, (n_rows) (for splitting a large batch into
/// launches): row r's entry count in build_plan.
std::vector<int64_t> row_entry_counts(const PlanInput& in);

/// The key ranges [from, end) that block b's items cover, in key order: its chunks (multiples of
/// in.chunk, and the fresh split) with its gaps cut out. Every from is a chunk start or the end of
/// a gap; a range never crosses a chunk boundary.
std::vector<std::pair<int64_t, int64_t>> block_pieces(const PlanInput& in, size_t b);

/// Builds the plan of rows [row_begin, row_end).
HostPlan build_plan(const PlanInput& in, int64_t row_begin, int64_t row_end);

/// A block whose keys' attention scores a forward measures (ForwardBatch::score_blocks).
struct ScoreBlockIn {
  int32_t block = -1;  // index into PlanInput::blocks; -1 when no view of the batch holds it
  int64_t len = 0;     // its length after the forward's appends (its count of scores)
};

/// The score tiles of one forward (attention_scores.h) as host arrays.
struct HostScorePlan {
  std::vector<ScoreTile> tiles;
  std::vector<AttnPair> pairs;
  std::vector<int64_t> out;  // per score block (in order): index of its key 0 in the scores
  int64_t n_scores = 0;      // scores of all the blocks (sum of their lengths)
};

/// The score tiles of every row of `in` over `blocks`: each block's keys cut at pages and at its
/// gaps (PlanBlock::gaps), with the pairs that see each tile's first key. A block named twice is
/// scored twice, into two places.
HostScorePlan build_score_plan(const PlanInput& in, const std::vector<ScoreBlockIn>& blocks);

}  // namespace hogwild::cuda
