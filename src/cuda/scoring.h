// Private to CudaBackend (cuda_forward.cpp, cuda_scores.cpp): the buffers of the attention scores
// (attention_scores.h, Backend::attention_scores). Every device address here is baked into the
// captured decode graphs: a buffer that grows drops them (grow() returns true then).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/attention_scores.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"

namespace hogwild::cuda {

struct CudaBackend::Scoring {
  float* lse = nullptr;  // (max_batch_tokens, num_attention_heads): AttnPlanView::lse
  // The plan, as int32 words: n_tiles, then tiles_cap ScoreTiles, then pairs_cap AttnPairs (fixed
  // offsets, so a graph's pointers stay right while the counts change); its pinned host mirror.
  int32_t* plan_dev = nullptr;
  int32_t* plan_host = nullptr;
  int64_t tiles_cap = 0, pairs_cap = 0;
  float* scores_dev = nullptr;   // (scores_cap) ScorePlanView::scores
  float* scores_host = nullptr;  // pinned copy, fetched after the forward
  int64_t scores_cap = 0;

  // This forward's (set by CudaBackend::prepare_scores).
  bool active = false;            // the batch names score blocks
  ScorePlanView view;             // max_tiles: the exact count (execute raises it to a bound)
  std::vector<int64_t> out, len;  // per score block: its first score, its length
  int64_t n_scores = 0;

  int64_t plan_words() const { return 1 + kScoreTileInts * tiles_cap + 2 * pairs_cap; }
  const ScoreTile* tiles_dev() const { return reinterpret_cast<const ScoreTile*>(plan_dev + 1); }
  const AttnPair* pairs_dev() const {
    return reinterpret_cast<const AttnPair*>(plan_dev + 1 + kScoreTileInts * tiles_cap);
  }

  /// Room for n_tiles tiles, n_pairs pairs and n scores; true when an address changed.
  bool grow(int64_t n_tiles, int64_t n_pairs, int64_t n) {
    bool moved = false;
    if (n_tiles > tiles_cap || n_pairs > pairs_cap) {
      if (plan_dev) HOGWILD_CUDA_CHECK(cudaFree(plan_dev));
      if (plan_host) HOGWILD_CUDA_CHECK(cudaFreeHost(plan_host));
      tiles_cap = std::max<int64_t>({2 * n_tiles, tiles_cap, 1024});
      pairs_cap = std::max<int64_t>({2 * n_pairs, pairs_cap, 4096});
      HOGWILD_CUDA_CHECK(cudaMalloc(&plan_dev, plan_words() * 4));
      HOGWILD_CUDA_CHECK(cudaMallocHost(&plan_host, plan_words() * 4));
      moved = true;
    }
    if (n > scores_cap) {
      if (scores_dev) HOGWILD_CUDA_CHECK(cudaFree(scores_dev));
      if (scores_host) HOGWILD_CUDA_CHECK(cudaFreeHost(scores_host));
      scores_cap = std::max<int64_t>(2 * n, 1 << 16);
      HOGWILD_CUDA_CHECK(cudaMalloc(&scores_dev, scores_cap * 4));
      HOGWILD_CUDA_CHECK(cudaMallocHost(&scores_host, scores_cap * 4));
      moved = true;
    }
    return moved;
  }
  ~Scoring() {
    if (lse) cudaFree(lse);
    if (plan_dev) cudaFree(plan_dev);
    if (plan_host) cudaFreeHost(plan_host);
    if (scores_dev) cudaFree(scores_dev);
    if (scores_host) cudaFreeHost(scores_host);
  }
};

}  // namespace hogwild::cuda
