// The stop policy of every command (generate, run, the server): which token ids end a sequence.
// The EOS set is the union, in this order and without repeats, of
//   1. tokenizer_config.json "eos_token" (the tokenizer's end of turn, e.g. Llama-3 Instruct's
//      <|eot_id|>, 128009),
//   2. config.json "eos_token_id" (int or list),
//   3. generation_config.json "eos_token_id" (int or list; transformers' generate() stops on it,
//      e.g. Llama-3's [128001, 128008, 128009]).
// transformers' generate() stops on 3 (falling back on 2); a chat turn ends with 1, which is not
// always in 3. Stopping on all three is what a user of a chat model expects and what llama.cpp does
// with its end-of-generation set. `--ignore-eos` (llama.cpp) keeps generating past all of them.
// In `hogwild run` the same set is forbidden during reasoning (formatting forbidden.eos), or ends
// the worker that samples one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hogwild {

/// The tokenizer's own end-of-sequence token: tokenizer_config.json "eos_token" and its id in the
/// tokenizer (nullopt when the text names no token of the vocabulary).
struct TokenizerEos {
  std::string text;
  std::optional<int32_t> id;
};

/// The union of the three sources above (tokenizer first), duplicates dropped, order kept.
std::vector<int32_t> eos_id_union(const std::vector<int32_t>& tokenizer,
                                  const std::vector<int64_t>& config,
                                  const std::vector<int64_t>& generation);

struct StopPolicy {
  std::vector<int32_t> eos_ids;      // eos_id_union of the three sources
  std::vector<std::string> sources;  // (eos_ids.size()) where each id comes from, e.g.
                                     // "tokenizer_config.json eos_token '<|im_end|>'"
  bool ignore_eos = false;           // --ignore-eos: no id ends a sequence
  /// The ids that end a sequence: eos_ids, or none with ignore_eos.
  std::vector<int32_t> stop_ids() const { return ignore_eos ? std::vector<int32_t>{} : eos_ids; }
  /// One line for summaries and `hogwild info`: "151645 (tokenizer_config.json eos_token
  /// '<|im_end|>'), 151643 (config.json, generation_config.json)", then ", ignored (--ignore-eos)"
  /// with ignore_eos; "none (no eos_token or eos_token_id anywhere)".
  std::string describe() const;
};

/// The stop policy of a model directory's three sources. Throws hogwild::Error naming the file
/// when an id is outside [0, vocab_size) or tokenizer_config.json's eos_token names no token
/// of tokenizer.json (tokenizer_eos with an empty id), with what to fix.
StopPolicy resolve_stop_policy(const std::optional<TokenizerEos>& tokenizer_eos,
                               const std::vector<int64_t>& config_eos,
                               const std::vector<int64_t>& generation_eos, int64_t vocab_size,
                               bool ignore_eos = false);

}  // namespace hogwild
