// Plain (single-sequence) generation over a Backend: prefill the prompt in one forward, then decode
// one token per forward into the same cache block. Hogwild sessions use the Backend directly, not
// this driver. Stop conditions: EOS ids, stop strings (through a text hook), max new tokens, the
// model's context length.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/stop_reason.h"
#include "model/backend.h"
#include "sampling/sampler.h"

namespace hogwild {

/// Finds stop strings in streamed text. Feed each newly decoded piece; after a match, text() is
/// the output up to (not including) the earliest stop string, as vLLM / the OpenAI API return it.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  /// Appends text; returns true when some stop string is now complete.
  bool push(const std::string& piece);
  bool stopped() const { return stopped_; }
  /// All text so far, cut before the first stop string once one matched.
  const std::string& text() const { return text_; }
  /// Text that can be shown now: text() minus a tail that could still be the start of a stop
  /// string (so a stream never shows part of a stop string). Everything once stopped.
  size_t safe_length() const;

 private:
  std::vector<std::string> stops_;
  std::string text_;
  bool stopped_ = false;
};

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  int64_t max_context = 0;  // context length, prompt included; 0 = max_position_embeddings
                            // (a larger value is capped there)
  std::vector<int64_t> eos_token_ids;     // stop after emitting any of these (kept in output)
  std::vector<std::string> stop_strings;  // need `decode_piece`
  /// Streaming detokenizer hook: text completed by one more generated id ("" allowed).
  std::function<std::string(int32_t)> decode_piece;
  /// Called with each generated id as soon as it is sampled.
  std::function<void(int32_t)> on_token;
  /// When set, logits of every position are reported in sequence order: first the prompt's rows
  /// (n_rows = prompt length), then one row per generated token (after it is fed; the last
  /// generated token is fed once more for its row). Row i = logits predicting token i+1 of
  /// prompt ++ generated. logits: (n_rows, vocab_size) fp32.
  std::function<void(const float* logits, int64_t n_rows)> on_logits;
  /// When set and true (e.g. by SIGINT), generation stops before the next forward with
  /// stop_reason interrupted; what was generated is returned.
  const std::atomic<bool>* interrupt = nullptr;
};

struct GenerateResult {
  std::vector<int32_t> generated;  // sampled ids (EOS included when it stopped the run)
  // eos, stop_string, max_new_tokens, context_length or interrupted (core/stop_reason.h)
  StopReason stop_reason = StopReason::none;
  std::string text;  // decoded text cut at a stop string (empty without decode_piece)
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // wall time of prefill / all decode forwards
  int64_t decode_forwards = 0;                     // forwards counted in decode_seconds
};

/// Runs plain generation of `prompt` on a fresh block of `backend` (freed at the end).
/// Throws hogwild::Error when the prompt is empty, longer than the context (max_context or the
/// model's max_position_embeddings; the message gives both numbers), fills it while max_new_tokens
/// > 0 (no room for one new token), or holds an id outside the vocab.
GenerateResult generate(Backend& backend, std::span<const int32_t> prompt, Sampler& sampler,
                        const GenerateOptions& opt);

}  // namespace hogwild
