// TokenPicker over the sampling library: one seeded Sampler per worker (seed + worker index, so
// worker 0 with seed s draws exactly as plain generation with seed s), repetition-penalty context
// = prompt + the worker's own sampled tokens.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hogwild/session.h"
#include "sampling/sampler.h"

namespace hogwild {

class SamplerPicker : public TokenPicker {
 public:
  /// params.seed is the base seed; worker w uses params.seed + w.
  SamplerPicker(const SamplingParams& params, int n_workers, std::vector<int32_t> prompt);
  int32_t pick(int worker, std::vector<float>& logits) override;
  /// True unless the repetition penalty or banned_tokens are set (host-only processors); the
  /// uniform is the worker's next RNG draw, so device and host picks consume the same stream.
  bool device_row(int worker, RowSampling& out) override;
  void picked(int worker, int32_t token) override { context_.at(worker).push_back(token); }

 private:
  std::vector<Sampler> samplers_;
  std::vector<std::vector<int32_t>> context_;  // (n_workers) prompt + own sampled tokens
};

/// A warning when every worker will write the same text: greedy decoding and nothing that tells
/// the workers apart (formatting f gives every worker the same step opening and layout texts, as
/// "plain" does), so each forward feeds them the same tokens in the same order. nullopt otherwise.
std::optional<std::string> same_text_warning(const SamplingParams& p, const Formatting& f,
                                             int n_workers);

}  // namespace hogwild
