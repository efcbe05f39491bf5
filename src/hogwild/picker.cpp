#include "hogwild/picker.h"

namespace hogwild {

SamplerPicker::SamplerPicker(const SamplingParams& params, int n_workers,
                             std::vector<int32_t> prompt) {
  for (int w = 0; w < n_workers; ++w) {
    SamplingParams p = params;
    p.seed = params.seed + static_cast<uint64_t>(w);
    samplers_.emplace_back(p);
    context_.push_back(prompt);
  }
}

int32_t SamplerPicker::pick(int worker, std::vector<float>& logits) {
  int32_t t = samplers_.at(worker).sample(logits, context_[worker]);
  context_[worker].push_back(t);
  return t;
}

}  // namespace hogwild
