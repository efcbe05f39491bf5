// generation_config.json: the model's default sampling settings, with transformers'
// GenerationConfig defaults for absent keys (transformers/generation/configuration_utils.py).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hogwild {

struct GenerationConfig {
  bool do_sample = false;             // false: greedy decoding (warpers below are not applied)
  double temperature = 1.0;           // logits / temperature (do_sample only)
  int64_t top_k = 50;                 // keep the k largest logits; 0 = off (do_sample only)
  double top_p = 1.0;                 // nucleus mass; 1 = off (do_sample only)
  double min_p = 0.0;                 // keep p >= min_p * p_max; 0 = off (HF None) (do_sample only)
  double repetition_penalty = 1.0;    // CTRL penalty on tokens already in the sequence; 1 = off
  std::vector<int64_t> eos_token_id;  // generation stops at any of these (int or list in the file)
  std::optional<int64_t> max_new_tokens;  // HF None when absent
  int64_t max_length = 20;  // HF default total length, used only when max_new_tokens unset
};

/// Parses a generation_config.json object; unknown keys are ignored, null means "default".
/// Throws hogwild::Error naming a key whose value has the wrong type or range
/// (temperature < 0, top_p outside (0, 1], min_p outside [0, 1], repetition_penalty <= 0, top_k <
/// 0).
GenerationConfig parse_generation_config(const nlohmann::json& j);
/// Reads DIR/generation_config.json; a missing file gives the defaults (as transformers does).
/// Throws hogwild::Error when the file exists but is unreadable or invalid.
GenerationConfig load_generation_config(const std::string& model_dir);

}  // namespace hogwild
