// CudaBackend and the KV budget (docs/ARCHITECTURE.md "Bounded shared memory"): forgetting cache
// tokens (the block table's gaps, cut out of the attention plan) and measuring the attention
// scores of ForwardBatch::score_blocks (attention_scores.h).
#include <cstring>

#include "cuda/attention_plan.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/scoring.h"

namespace hogwild::cuda {

void CudaBackend::forget_tokens(BlockId b, int64_t begin, int64_t end) {
  table_.forget(b, begin, end);  // the next forward's plan skips them (ForwardPlan::gaps)
}

void CudaBackend::drop_graphs() {
  for (auto& [k, g] : graphs_) cudaGraphExecDestroy(g);
  graphs_.clear();
}

void CudaBackend::prepare_scores(const PlanInput& pin, const std::vector<ScoreBlockIn>& blocks) {
  if (!sc_) sc_ = std::make_unique<Scoring>();
  Scoring& sc = *sc_;
  sc.active = !blocks.empty();
  scores_.clear();
  scores_ready_ = !sc.active;
  if (!sc.active) return;
  if (!sc.lse)
    HOGWILD_CUDA_CHECK(cudaMalloc(&sc.lse, static_cast<size_t>(opt_.max_batch_tokens) *
                                               cfg_.num_attention_heads * sizeof(float)));
  const HostScorePlan hp = build_score_plan(pin, blocks);
  const int64_t n_tiles = static_cast<int64_t>(hp.tiles.size());
  const int64_t n_pairs = static_cast<int64_t>(hp.pairs.size());
  HOGWILD_CHECK(n_tiles <= INT32_MAX / 2);
  if (sc.grow(n_tiles, n_pairs, hp.n_scores)) drop_graphs();
  int32_t* h = sc.plan_host;
  h[0] = static_cast<int32_t>(n_tiles);
  std::memcpy(h + 1, hp.tiles.data(), n_tiles * sizeof(ScoreTile));
  int32_t* h_pairs = h + 1 + kScoreTileInts * sc.tiles_cap;
  std::memcpy(h_pairs, hp.pairs.data(), n_pairs * sizeof(AttnPair));
  // Two copies (the count and tiles, the pairs): the unused capacity between them stays behind.
  HOGWILD_CUDA_CHECK(cudaMemcpyAsync(sc.plan_dev, h, (1 + kScoreTileInts * n_tiles) * 4,
                                     cudaMemcpyHostToDevice, stream_));
  if (n_pairs > 0)
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(sc.plan_dev + (h_pairs - h), h_pairs, n_pairs * 8,
                                       cudaMemcpyHostToDevice, stream_));
  if (hp.n_scores > 0)
    HOGWILD_CUDA_CHECK(cudaMemsetAsync(sc.scores_dev, 0, hp.n_scores * 4, stream_));
  sc.view.n_tiles = sc.plan_dev;
  sc.view.tiles = sc.tiles_dev();
  sc.view.pairs = sc.pairs_dev();
  sc.view.max_tiles = static_cast<int32_t>(n_tiles);
  sc.view.lse = sc.lse;
  sc.view.scores = sc.scores_dev;
  sc.out = hp.out;
  sc.len.clear();
  for (const ScoreBlockIn& b : blocks) sc.len.push_back(b.len);
  sc.n_scores = hp.n_scores;
}

void CudaBackend::fetch_scores() {
  if (!sc_ || !sc_->active || sc_->n_scores == 0) return;
  HOGWILD_CUDA_CHECK(cudaMemcpyAsync(sc_->scores_host, sc_->scores_dev, sc_->n_scores * 4,
                                     cudaMemcpyDeviceToHost, stream_));
}

const std::vector<std::vector<float>>& CudaBackend::attention_scores() const {
  if (!scores_ready_) {
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const Scoring& sc = *sc_;
    scores_.resize(sc.out.size());
    for (size_t i = 0; i < sc.out.size(); ++i)
      scores_[i].assign(sc.scores_host + sc.out[i], sc.scores_host + sc.out[i] + sc.len[i]);
    scores_ready_ = true;
  }
  return scores_;
}

}  // namespace hogwild::cuda
