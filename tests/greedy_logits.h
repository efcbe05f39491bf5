// Greedy generation as the golden tests compare it with transformers: `n` tokens after `prompt`
// (no stop ids, the end-of-sequence id fed like any other: `generate(do_sample=False,
// max_new_tokens=n, min_new_tokens=n)`), then the fp32 logits of every position of prompt ++
// generated as one `model(input_ids)` gives them, (prompt + n) x vocab row-major.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plain.h"
#include "hogwild/codec.h"
#include "kv/backend.h"

namespace hogwild::testing {

struct GreedyLogits {
  std::vector<int32_t> generated;  // n ids
  std::vector<float> logits;       // (prompt + n) x vocab
};

inline GreedyLogits greedy_logits(Backend& backend, const std::vector<int32_t>& prompt, int64_t n) {
  const int64_t vocab = backend.config().vocab_size;
  PlainRequest p;  // greedy, no stop ids
  p.prompt = prompt;
  p.max_tokens = n;
  p.ignore_eos = true;
  GreedyLogits r;
  r.generated = generate_plain(backend, IdCodec(static_cast<int32_t>(vocab)), p).generated;
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), r.generated.begin(), r.generated.end());
  sequence_logits(backend, seq, 512, [&](const float* l, int64_t rows) {
    r.logits.insert(r.logits.end(), l, l + rows * vocab);
  });
  return r;
}

}  // namespace hogwild::testing
