// TokenPicker over the sampling library: one seeded Sampler per worker (seed + worker index, so
// worker 0 with seed s draws exactly as plain generation with seed s), repetition-penalty context
// = prompt + the worker's own sampled tokens.
#pragma once

#include <vector>

#include "hogwild/session.h"
#include "sampling/sampler.h"

namespace hogwild {

class SamplerPicker : public TokenPicker {
 public:
  /// params.seed is the base seed; worker w uses params.seed + w.
  SamplerPicker(const SamplingParams& params, int n_workers, std::vector<int32_t> prompt);
  int32_t pick(int worker, std::vector<float>& logits) override;

 private:
  std::vector<Sampler> samplers_;
  std::vector<std::vector<int32_t>> context_;  // (n_workers) prompt + own sampled tokens
};

}  // namespace hogwild
