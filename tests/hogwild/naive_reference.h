// NaiveSession: naive reference of the Hogwild! semantics (docs/ARCHITECTURE.md §2) at the level
// of a whole session, written for the tests only and independent of the engine's blocks, views and
// kernels (the backend-level reference is tests/cpu/reference_model.h NaiveBackend):
//  - every token's K (UN-rotated, after q/k-norm) and V are computed once, in the forward that
//    feeds it, by its writer in the writer's view, and kept;
//  - each worker's view is rebuilt at token level from the text-level state (prompt, finished steps
//    in finishing order, each worker's current step, constant texts) by this file's own layout
//    code;
//  - at every forward every visible key is rotated to its *current* view position and plain masked
//    attention (view position <= query position) runs in double precision.
// Constant texts (others' header, separator, separator + own header) are computed in the prefill
// with view [prompt][that text], as the session documents (layout.h ConstBlocks). A step belongs
// to the history from the forward that feeds its last token on (session.h).
// inv_freq / attention_scaling come from cpu::compute_rope_params (tested against HF elsewhere);
// rotation, attention and the whole layer stack are written here.
#pragma once

#include <map>
#include <vector>

#include "hogwild/layout.h"
#include "model/weights.h"

namespace hogwild::testing {

struct RefFed {
  int worker = 0;  // writer
  int step = 0;    // writer's 1-based step
  int32_t token = 0;
};

class NaiveSession {
 public:
  NaiveSession(const ModelWeights& w, Layout layout, int n_workers);

  /// Prefill: prompt, then each constant text computed after the prompt. Returns the logits of the
  /// last prompt token (vocab_size).
  std::vector<double> prefill(const std::vector<int32_t>& prompt,
                              const std::vector<std::vector<int32_t>>& others_header,
                              const std::vector<int32_t>& sep,
                              const std::vector<std::vector<int32_t>>& sep_own_header);

  /// One serial step: `fed` in batch order; `closed` = (worker, step) pairs whose step's last token
  /// is fed now, in finishing order (they read as history in this forward). Returns, for each
  /// worker that fed tokens (ascending worker index), the logits of its last fed token.
  /// Independent layout: a worker's view is the prompt, the history and its own steps not in the
  /// history (the history stays the prompt unless steps are closed: Skeleton-of-Thought).
  std::map<int, std::vector<double>> forward(const std::vector<RefFed>& fed,
                                             const std::vector<std::pair<int, int>>& closed);

  /// Forgets history tokens [begin, end) (indices into the history: the prompt, then the finished
  /// steps in finishing order, as the session's history block holds them; the KV budget,
  /// forgetting.h): from the next forward on no query attends to them, while every position
  /// stays as it was (they still occupy their places in every view).
  void forget(int64_t begin, int64_t end);
  /// Of the last forward(): per token of the history as it was before that forward's closing
  /// steps (the engine's history block: the closing steps are blocks of their own until promoted),
  /// the largest softmax attention weight any fed row gave it at any layer and head (0 where no
  /// row saw it). Backend::attention_scores' definition.
  const std::vector<double>& history_scores() const { return history_scores_; }

  /// Token-level view of worker w (token record indices), for debugging.
  std::vector<int> view(int w) const;
  int32_t token_id(int rec) const { return toks_[rec].id; }

 private:
  struct Tok {
    int32_t id;
    std::vector<std::vector<double>> k, v;  // (layers) x (num_key_value_heads * head_dim)
  };
  using Seg = std::vector<int>;  // token record indices

  // Runs the layer stack for new tokens `rows` (record indices), each at position pos[i] attending
  // to view[i] (record indices in view order, positions = indices). Returns final-normed logits
  // for rows with want[i].
  std::vector<std::vector<double>> run(const std::vector<int>& rows,
                                       const std::vector<std::vector<int>>& views,
                                       const std::vector<bool>& want);
  int add_token(int32_t id);
  Seg current(int w) const;
  Seg history() const;  // prompt, then the finished steps (record indices)

  ModelWeights w_;
  Layout layout_;
  int n_;
  std::vector<double> inv_freq_;
  double attn_scale_ = 1.0;
  int64_t rotary_dim_ = 0;
  std::vector<Tok> toks_;
  Seg prompt_, sep_;
  std::vector<Seg> others_header_, sep_own_header_;
  std::map<std::pair<int, int>, Seg> steps_;
  std::vector<std::pair<int, int>> history_;  // finished steps, finishing order
  std::vector<bool> forgotten_;               // by record index
  std::vector<double> history_scores_;
  std::vector<double> score_by_rec_;  // scratch of run(): max weight per record (-1 = unseen)
};

}  // namespace hogwild::testing
