// CudaBackend and the KV budget (docs/ARCHITECTURE.md "Bounded shared memory"): forgetting cache
// tokens (the block table's gaps, cut out of the attention plan) and measuring the attention
// scores of ForwardBatch::score_blocks (attention_scores.h).
#include <algorithm>
#include <climits>
#include <cstring>

#include "cuda/attention_plan.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/key_redundancy.h"
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

namespace {

// One device allocation per array of a redundancy measure, freed on scope exit.
struct DeviceArrays {
  std::vector<void*> ptrs;
  template <typename T>
  T* alloc(size_t n, const T* from, cudaStream_t s) {
    void* p = nullptr;
    HOGWILD_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
    ptrs.push_back(p);
    if (from && n > 0)
      HOGWILD_CUDA_CHECK(cudaMemcpyAsync(p, from, n * sizeof(T), cudaMemcpyHostToDevice, s));
    return static_cast<T*>(p);
  }
  ~DeviceArrays() {
    for (void* p : ptrs) cudaFree(p);
  }
};

}  // namespace

std::vector<float> CudaBackend::key_redundancy(
    BlockId b, const std::vector<std::pair<int64_t, int64_t>>& chunks) const {
  const std::vector<uint8_t> kept = table_.kept_mask(b, chunks, "key_redundancy");
  const int64_t len = static_cast<int64_t>(kept.size());
  const int64_t n = static_cast<int64_t>(chunks.size());
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  if (n < 2) return out;
  HOGWILD_CHECK(n <= INT32_MAX / 2 && len <= INT32_MAX);
  std::vector<int32_t> ranges;
  for (const auto& [cb, ce] : chunks) ranges.insert(ranges.end(), {int32_t(cb), int32_t(ce)});
  const std::vector<int32_t>& pages = table_.pages(b);
  const int64_t kvh = layout_.num_key_value_heads, hd = layout_.head_dim;
  HOGWILD_CHECK(hd <= 256);
  DeviceArrays d;
  RedundancyArgs a;
  a.pages = d.alloc(pages.size(), pages.data(), stream_);
  a.chunks = d.alloc(ranges.size(), ranges.data(), stream_);
  a.kept = d.alloc(kept.size(), kept.data(), stream_);
  a.n = static_cast<int32_t>(n);
  a.keys = d.alloc<float>(static_cast<size_t>(kvh * n * hd), nullptr, stream_);
  a.sum = d.alloc<float>(static_cast<size_t>(kvh * hd), nullptr, stream_);
  a.out = d.alloc<float>(static_cast<size_t>(n), nullptr, stream_);
  a.scale = static_cast<float>(1.0 / (double(n - 1) * cfg_.num_hidden_layers * kvh));
  HOGWILD_CUDA_CHECK(cudaMemsetAsync(a.out, 0, n * sizeof(float), stream_));
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l)
    layer_key_redundancy(pool_ + l * layout_.layer_elems(), layout_, a, stream_);
  HOGWILD_CUDA_CHECK(cudaGetLastError());
  HOGWILD_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), a.out, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

}  // namespace hogwild::cuda
