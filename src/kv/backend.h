// The interface between the scheduler (plain generation, hogwild sessions) and a compute backend
// (CPU reference in src/cpu, CUDA in src/cuda). The backend owns the weights and the KV cache.
//
// KV cache = a set of cache blocks (docs/ARCHITECTURE.md §2). A block holds K and V of every layer
// for a run of tokens; keys are stored rotated by RoPE at *block-local* positions 0..len-1. A
// worker's view is an ordered list of block ids (a block may occur more than once); the offset of
// an occurrence is the sum of the lengths of the blocks before it in the view.
//
// Plain generation is the degenerate case: one block, one worker whose view is that block.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/config.h"

namespace hogwild {

using BlockId = int32_t;

/// KV cache page in tokens. Both backends hold blocks in whole pages (the CUDA pool's page is the
/// attention kernel's key tile, cuda/kv_layout.h, which static_asserts the match; the CPU counts
/// the same pages so that KV admission agrees), and the KV estimate of a run
/// (hogwild/kv_budget.h) allows one partly filled page per live block.
inline constexpr int64_t kKvPageTokens = 64;

/// What a prefix-cache lookup found (Backend::find_prefix, kv/block_table.h): the leading
/// tokens of a sequence whose K/V the cache holds, in whole kKvPageTokens pages, and how many of
/// those pages are idle (no live block holds them; sharing them takes them from the free pages).
struct PrefixHit {
  int64_t tokens = 0;      // a multiple of kKvPageTokens
  int64_t idle_pages = 0;  // of the tokens / kKvPageTokens pages
};

/// One token fed in a forward.
struct TokenInput {
  int32_t token_id = 0;  // vocabulary id
  int32_t worker = 0;  // index into ForwardBatch::views: the writer, in whose view K/V are computed
  BlockId block = 0;   // target block: the token is appended at block index len(block)
  bool want_logits = false;  // produce logits for this row
};

/// How to draw one token from one logits row on the backend (ForwardBatch::draw), with
/// transformers' processors in transformers' order: temperature -> top-k -> top-p -> min-p -> draw
/// (sampling/sampler.h; the repetition penalty has no device form, callers sample those rows on
/// the host).
struct RowSampling {
  float temperature = 0.0f;  // <= 0: greedy (argmax, lowest id among ties)
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // >= 1 = off
  float min_p = 0.0f;        // 0 = off
  float u = 0.0f;            // the uniform draw in [0, 1): inverse CDF in vocabulary order
  int32_t banned = -1;       // index into ForwardDraw::banned_sets (-1 = none banned)
};

/// The draw a forward makes (ForwardBatch::draw): one token per logits row, each row's banned set
/// (banned_sets[row.banned]) set to -inf first, by the one contract of sampling/row_draw.h — on
/// the device where the backend samples there (Backend::samples_on_device), else on the host.
struct ForwardDraw {
  std::vector<RowSampling> rows;  // one per want_logits token, in batch order; empty = no draw
  std::vector<std::vector<int32_t>> banned_sets;  // vocabulary ids, indexed by RowSampling::banned
  // With rows: also return the logits the rows were drawn from, before the banned ids (for dumps
  // such as `run --dump-logits`; on the GPU one more device-to-host copy).
  bool keep_logits = false;
};

/// One forward = one serial step: every active worker's new tokens, batched.
/// Order of `tokens` fixes the order of appends to each block. All tokens are written to their
/// blocks before attention, so view offsets use the block lengths *after* this forward's appends.
/// A new token's view position p = (offset of the LAST occurrence of its target block in its
/// writer's view) + its block index. At every layer it attends to every key of every block
/// occurrence in its writer's view whose view position (offset + block index) is <= p, with the
/// query rotated by (p - offset) for that occurrence (docs/ARCHITECTURE.md §2). Precondition: the
/// target block occurs in the writer's view.
struct ForwardBatch {
  std::vector<TokenInput> tokens;
  std::vector<std::vector<BlockId>> views;  // views[worker] = ordered block ids (occurrences)
  // Blocks whose keys' attention this forward measures (Backend::attention_scores; the KV budget's
  // eviction policy, docs/ARCHITECTURE.md "Bounded shared memory"). Empty: nothing is measured.
  std::vector<BlockId> score_blocks;
  ForwardDraw draw;  // no rows: the forward returns logits
};

/// What one forward returns (Backend::forward).
struct ForwardResult {
  // (number of want_logits tokens, vocab_size) fp32 rows in batch order, when the batch draws
  // nothing or keeps its logits (ForwardDraw::keep_logits); otherwise empty.
  std::vector<float> logits;
  // With a draw: the drawn vocabulary id of each logits row, in batch order; otherwise empty.
  std::vector<int32_t> tokens;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const ModelConfig& config() const = 0;

  /// Creates an empty block; returns its id. Throws hogwild::Error when the cache is full.
  virtual BlockId new_block() = 0;
  /// Frees a block (its id may be reused).
  virtual void free_block(BlockId b) = 0;
  /// Number of tokens in block b.
  virtual int64_t block_len(BlockId b) const = 0;
  /// Drops the last n tokens of block b (n <= len).
  virtual void truncate_block(BlockId b, int64_t new_len) = 0;
  /// Step promotion (docs/ARCHITECTURE.md §4): appends all of src's tokens to the end of dst.
  /// Values are copied; keys are rotated once by len(dst) (a pure rotation, no attention factor).
  /// No forward.
  virtual void append_block(BlockId dst, BlockId src) = 0;

  /// Forgets tokens [begin, end) of block b (docs/ARCHITECTURE.md "Bounded shared memory"): from
  /// the next forward on no query attends to them, in any view; the block keeps its length, so
  /// every view position (and every key already stored) stays as it is and nothing is recomputed.
  /// append_block carries src's forgotten tokens into dst. Throws hogwild::Error for an unknown
  /// block or a bad range, or when the backend cannot forget (the default; the CPU and CUDA
  /// backends forget).
  virtual void forget_tokens(BlockId /*b*/, int64_t /*begin*/, int64_t /*end*/) {
    throw Error(
        "this backend cannot forget cache tokens yet; run a KV budget (--kv-budget) on the CPU "
        "backend (--device cpu)");
  }
  /// True when the backend implements forget_tokens and attention_scores.
  virtual bool can_forget() const { return false; }
  /// After a forward whose batch named score_blocks: for each of them, in that order, (len) fp32,
  /// the largest softmax attention weight (in [0, 1]) that any query row of the forward gave each
  /// key, over every layer and query head (the score of R-KV / H2O-style eviction, max over the
  /// workers' queries). Keys no row saw (beyond a row's position, forgotten) score 0. Throws
  /// hogwild::Error when the backend cannot measure them (can_forget() false).
  virtual const std::vector<std::vector<float>>& attention_scores() const {
    throw Error("this backend does not measure attention scores; use --device cpu");
  }
  /// R-KV's redundancy (Cai et al. 2025, arXiv 2505.24133, §3 "redundancy estimation"), measured
  /// per chunk rather than per token: for each of `chunks` ([begin, end) token ranges of block b,
  /// within its length), how much its keys repeat the other chunks'. Per layer and KV head, every
  /// key not forgotten is L2-normalised, a chunk's key is the mean of its normalised keys,
  /// normalised again (zero when nothing of it is kept or its keys are all zero), and its
  /// redundancy there is the mean cosine similarity to the other chunks' keys (the similarity
  /// matrix with its diagonal left out); the result, (chunks.size()) fp32 in [-1, 1], is that
  /// mean averaged over layers and KV heads (0 for a lone chunk). Keys as stored: rotated by RoPE
  /// at block-local positions, as R-KV compares the cache's rotated keys. Throws hogwild::Error
  /// for an unknown block or a range outside it, or when the backend cannot measure it (the
  /// default; measures_redundancy() says).
  virtual std::vector<float> key_redundancy(
      BlockId /*b*/, const std::vector<std::pair<int64_t, int64_t>>& /*chunks*/) const {
    throw Error(
        "this backend does not measure key redundancy (--kv-redundancy); run on the CPU or CUDA "
        "backend, or with --kv-redundancy 0");
  }
  /// True when the backend implements key_redundancy.
  virtual bool measures_redundancy() const { return false; }

  /// Copies block b's layer `layer` out as fp32: k and v get (len, num_key_value_heads, head_dim);
  /// keys as stored (rotated at block-local positions). A page given back because every token of
  /// it is forgotten (BlockTable::forget) reads as zeros where the backend addresses K/V by page
  /// (CUDA); the CPU backend keeps a block's K/V contiguous and returns them as stored. For tests
  /// and debugging.
  virtual void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                          std::vector<float>& v) const = 0;

  /// Runs one forward, the backend's one entry point for compute: appends the batch's tokens to
  /// their blocks and returns the logits rows or, with batch.draw, the drawn ids (ForwardResult).
  /// Throws hogwild::Error on invalid input (unknown block, token id out of range; with a draw:
  /// rows.size() differs from the number of want_logits tokens, a malformed row
  /// (check_row_sampling, sampling/row_draw.h), or a row with nothing left to draw), before the
  /// cache changes where the input is malformed.
  virtual void forward(const ForwardBatch& batch, ForwardResult& out) = 0;
  /// The logits-only forward: `forward` of a batch without a draw, whose logits land in `logits`
  /// ((want_logits rows, vocab_size) fp32; the vector's storage is reused). Throws hogwild::Error
  /// as forward does, and when the batch asks for a draw.
  void forward(const ForwardBatch& batch, std::vector<float>& logits) {
    if (!batch.draw.rows.empty())
      throw Error("Backend::forward: a batch that draws returns tokens; pass a ForwardResult");
    ForwardResult out;
    out.logits.swap(logits);
    forward(batch, out);
    logits.swap(out.logits);
  }
  /// True when a forward's draw runs on the device (the logits never leave it unless kept);
  /// false when the backend fetches the logits and draws on the host (sampling/row_draw.h).
  virtual bool samples_on_device() const { return false; }
  /// The largest forward (in tokens) whose first run at a given shape costs far more than its
  /// later runs, so that a server warms such forwards up before its first request
  /// (engine/warmup.h): the CUDA backend replays forwards of up to this many tokens as CUDA graphs
  /// captured on first use. 0 (the default, and the CPU backend): no first-run cost worth it.
  virtual int64_t warmup_tokens() const { return 0; }

  // ---- prefix cache (automatic prefix caching, docs/ARCHITECTURE.md §2 "Prefix sharing"). A
  // block that begins with a prompt (fed as the block's first tokens, in a view of that block
  // alone) holds, page by page, the same K/V in every session whose prompt begins with the same
  // tokens: keys are rotated at block-local positions. The defaults: a backend without a cache.

  /// The cached pages that begin tokens[0, n) (kv/block_table.h find_prefix). Changes nothing.
  virtual PrefixHit find_prefix(const int32_t* /*tokens*/, int64_t /*n*/) const { return {}; }
  /// Starts the empty block b with those pages (shared, not copied where the backend addresses
  /// K/V by page); returns the tokens b then holds (a multiple of kKvPageTokens; 0 = no hit).
  /// Throws hogwild::Error for an unknown or non-empty block.
  virtual int64_t share_prefix(BlockId /*b*/, const int32_t* /*tokens*/, int64_t /*n*/) {
    return 0;
  }
  /// Caches the full pages of block b's first n tokens, tokens[0, n), after the forward that
  /// computed them as a prefix reading nothing before it (a prompt). Throws hogwild::Error for
  /// an unknown block or n > block_len(b).
  virtual void cache_prefix(BlockId /*b*/, const int32_t* /*tokens*/, int64_t /*n*/) {}
  /// KV in use (tokens, whole pages) that no live block holding it filled: shared prompt pages
  /// whose first session has ended, or that came back from the idle cache. The engine's
  /// admission counts them beside the sessions' reservations (BlockTable::unowned_pages).
  virtual int64_t kv_unowned_tokens() const { return 0; }

  /// KV cache capacity in tokens, counted as the backend allocates (the CUDA pool rounds every
  /// block up to whole pages); 0 = no fixed limit (host memory).
  virtual int64_t kv_capacity_tokens() const { return 0; }
  /// KV cache in use, in the unit of kv_capacity_tokens (tokens, or whole pages x page size).
  virtual int64_t kv_used_tokens() const = 0;
  /// Number of live (allocated, not freed) blocks; 0 once every session has freed its blocks.
  virtual int64_t live_blocks() const = 0;
};

}  // namespace hogwild
