// Token sampling with transformers' logits processors, in transformers' order
// (transformers/generation/utils.py _get_logits_processor, generation/logits_process.py):
//   repetition penalty -> [do_sample only:] temperature -> top-k -> top-p -> min-p -> softmax ->
//   draw.
// Greedy (do_sample = false, or temperature 0) takes the argmax after the repetition penalty.
// Draws use the project's own seeded PRNG (xoshiro256**), so a seed reproduces a run on any
// machine; the draws are not those of torch.multinomial.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sampling/generation_config.h"

namespace hogwild {

/// xoshiro256** (Blackman & Vigna 2018), seeded through splitmix64. Portable and reproducible.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t next();
  /// Uniform double in [0, 1) from the top 53 bits.
  double uniform();

 private:
  uint64_t s_[4];
};

struct SamplingParams {
  bool do_sample = false;           // false: greedy
  float temperature = 1.0f;         // <= 0 with do_sample: greedy (llama.cpp convention)
  int64_t top_k = 50;               // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off
  uint64_t seed = 0;
  std::vector<int32_t> banned_tokens;  // set to -inf before everything else (forbidden tokens)

  /// The sampling part of a generation_config.json.
  static SamplingParams from(const GenerationConfig& g, uint64_t seed = 0);
  /// True when the next token is the argmax.
  bool greedy() const { return !do_sample || temperature <= 0.0f; }
  /// The effective settings in one line, for run summaries: "greedy" or "temperature 0.6, top_k
  /// 20, top_p 0.95, min_p 0, seed 7", plus ", repetition_penalty 1.1" when it is not 1.
  std::string describe() const;
};

/// Checks temperature, top_k, top_p, min_p and repetition_penalty against the table of ranges
/// (core/request_fields.h). Throws RequestError naming the first field out of range.
void check_sampling(const SamplingParams& p);

class Sampler {
 public:
  explicit Sampler(SamplingParams p);
  const SamplingParams& params() const { return p_; }

  /// Applies banned tokens, the repetition penalty over `context` (prompt + generated ids so far;
  /// ids outside the vocabulary are ignored) and, when sampling, temperature, top-k, top-p and
  /// min-p, in place. logits: (vocab_size) fp32; removed tokens become -inf.
  void process(std::vector<float>& logits, std::span<const int32_t> context) const;

  /// Picks the next token from one row of logits (vocab_size). Advances the RNG only when
  /// sampling. Throws hogwild::Error if every token was removed (e.g. all banned).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> context);

  /// The next uniform in [0, 1) of this sampler's RNG (the one `sample` would draw): for samplers
  /// that run elsewhere (GPU sampling) but must keep this seed's stream.
  double next_uniform() { return rng_.uniform(); }

  /// Softmax of processed logits (what `sample` draws from), for tests and logging.
  std::vector<float> probabilities(std::span<const float> logits,
                                   std::span<const int32_t> context) const;

 private:
  SamplingParams p_;
  Rng rng_;
  std::vector<float> buf_;
};

}  // namespace hogwild
