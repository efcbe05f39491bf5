// The host twin of device sampling (Backend::forward_sample, src/cuda/sampling.h): banned ids to
// -inf, then the CPU Sampler's processors (temperature -> top-k -> top-p -> min-p), then greedy
// argmax or the inverse CDF in vocabulary order at the row's uniform, in double as
// Sampler::sample. Shared by the session test with a host "device" and the GPU loading test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/backend.h"
#include "sampling/sampler.h"

namespace hogwild::test {

/// The token RowSampling `r` draws from one logits row (vocab_size), or -1 when none can be drawn.
inline int32_t host_row_draw(std::vector<float> l, const RowSampling& r,
                             const std::vector<int32_t>& banned) {
  for (int32_t id : banned)
    if (id >= 0 && id < static_cast<int64_t>(l.size()))
      l[id] = -std::numeric_limits<float>::infinity();
  SamplingParams p;
  p.do_sample = r.temperature > 0;
  p.temperature = r.temperature;
  p.top_k = r.top_k;
  p.top_p = r.top_p;
  p.min_p = r.min_p;
  Sampler(p).process(l, {});
  const auto best = std::max_element(l.begin(), l.end());
  if (!p.do_sample) return static_cast<int32_t>(best - l.begin());
  double sum = 0;
  for (float x : l) sum += std::exp(double(x) - *best);
  const double target = double(r.u) * sum;
  double cum = 0;
  int32_t pick = -1;
  for (size_t i = 0; i < l.size(); ++i) {
    if (std::isinf(l[i])) continue;
    cum += std::exp(double(l[i]) - *best);
    pick = static_cast<int32_t>(i);
    if (target < cum) break;
  }
  return pick;
}

}  // namespace hogwild::test
