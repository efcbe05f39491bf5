// The sampling flags shared by `hogwild generate` and `hogwild run`, and how they override the
// model's generation_config.json (as in HF: any of temperature/top-k/top-p/min-p turns sampling
// on; --greedy forces argmax and excludes them). llama.cpp spellings where they do not clash:
// --temp, -s/--seed (-1 = random).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "apps/hogwild/cli_util.h"
#include "sampling/generation_config.h"
#include "sampling/sampler.h"

namespace hogwild::cli {

struct SamplingFlags {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  bool greedy = false;
  int64_t seed = 0;  // -1 = random (resolve_seed)
};

/// Adds --temperature/--temp --top-k --top-p --min-p --repetition-penalty --greedy -s/--seed.
inline void add_sampling_flags(CLI::App* c, SamplingFlags& f, const char* seed_help) {
  auto* t = c->add_option("--temperature,--temp", f.temperature,
                          "sampling temperature (0 = greedy; turns sampling on) [default: "
                          "generation_config.json]");
  auto* k = c->add_option("--top-k", f.top_k,
                          "keep the k most likely tokens (0 = off; turns sampling on) [default: "
                          "generation_config.json]");
  auto* p = c->add_option("--top-p", f.top_p,
                          "nucleus sampling mass in (0, 1] (turns sampling on) [default: "
                          "generation_config.json]");
  auto* m = c->add_option("--min-p", f.min_p,
                          "drop tokens below min_p * p_max (turns sampling on) [default: "
                          "generation_config.json]");
  c->add_option("--repetition-penalty", f.repetition_penalty,
                "HF repetition penalty (1 = off) [default: generation_config.json]");
  c->add_flag("--greedy", f.greedy, "argmax decoding, whatever generation_config.json says")
      ->excludes(t)
      ->excludes(k)
      ->excludes(p)
      ->excludes(m);
  add_seed_flag(c, f.seed, seed_help);
}

/// generation_config.json defaults, overridden by the flags given, with `seed` (resolve_seed of
/// the flag). Throws RequestError (the table's sentence, core/request_fields.h) for a flag out of
/// its range, checked on the value given before it narrows to the engine's 32-bit float (where
/// 2.0000000000000004 is 2), as the HTTP server checks its JSON numbers; Sampler checks the rest.
inline SamplingParams sampling_params(const SamplingFlags& f, const GenerationConfig& g,
                                      uint64_t seed) {
  if (f.temperature) check_real_field(RequestField::temperature, *f.temperature);
  if (f.top_p) check_real_field(RequestField::top_p, *f.top_p);
  if (f.min_p) check_real_field(RequestField::min_p, *f.min_p);
  if (f.repetition_penalty)
    check_real_field(RequestField::repetition_penalty, *f.repetition_penalty);
  if (f.top_k) check_field(RequestField::top_k, *f.top_k);
  SamplingParams p = SamplingParams::from(g, seed);
  if (f.temperature || f.top_k || f.top_p || f.min_p) p.do_sample = true;
  if (f.temperature) p.temperature = static_cast<float>(*f.temperature);
  if (f.top_k) p.top_k = *f.top_k;
  if (f.top_p) p.top_p = static_cast<float>(*f.top_p);
  if (f.min_p) p.min_p = static_cast<float>(*f.min_p);
  if (f.repetition_penalty) p.repetition_penalty = static_cast<float>(*f.repetition_penalty);
  if (f.greedy) p.do_sample = false;
  return p;
}

}  // namespace hogwild::cli
