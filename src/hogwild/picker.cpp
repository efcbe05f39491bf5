#include "hogwild/picker.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

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

std::optional<std::string> same_text_warning(const SamplingParams& p, const Formatting& f,
                                             int n_workers) {
  if (!p.greedy() || n_workers < 2) return std::nullopt;
  for (int w = 1; w < n_workers; ++w)
    if (f.step_start(w, 1, false) != f.step_start(0, 1, false) ||
        f.step_start(w, 1, true) != f.step_start(0, 1, true) ||
        f.others_header(w) != f.others_header(0) || f.own_header(w) != f.own_header(0))
      return std::nullopt;
  return fmt::format(
      "greedy decoding with formatting '{}': all {} workers see the same tokens and will write the "
      "same text; sample (e.g. --temperature 0.6) or use a formatting that names the workers",
      f.name, n_workers);
}

bool SamplerPicker::device_row(int worker, RowSampling& out) {
  Sampler& s = samplers_.at(worker);
  const SamplingParams& p = s.params();
  if (p.repetition_penalty != 1.0f || !p.banned_tokens.empty()) return false;
  out = RowSampling{};
  if (p.greedy()) return true;  // temperature 0: argmax; no draw (as Sampler::sample)
  out.temperature = p.temperature;
  out.top_k = static_cast<int32_t>(std::min<int64_t>(p.top_k, INT32_MAX));
  out.top_p = p.top_p;
  out.min_p = p.min_p;
  out.u = static_cast<float>(s.next_uniform());
  if (out.u >= 1.0f) out.u = std::nextafter(1.0f, 0.0f);  // a double just below 1 rounds up
  return true;
}

}  // namespace hogwild
