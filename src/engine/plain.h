// A plain completion on the Engine: the prompt continued by one worker under formatting "plain",
// which inserts nothing (no rules prompt, no step openings, no layout texts, no collaboration
// check), so the session is plain generation token for token (docs/ARCHITECTURE.md §2). There is
// one decode loop: `hogwild generate` and the server's plain completions build their session here
// and run it on the Engine beside every other session.
//
// Stop rules, as HF transformers' generate() and vLLM apply them:
//   eos             an end-of-sequence id was drawn (it is the last generated id; not fed). Also
//                   when it was the last token max_tokens allowed (vLLM's finish_reason "stop").
//   max_new_tokens  max_tokens were generated (also max_tokens 1: the token drawn from the
//                   prompt's row; vLLM's "length").
//   context_length  the prompt and the generated tokens fill the context (HF's max_length).
//   stop_string     the caller's observer found a stop string (run_plain's on_token; the output
//                   is cut before it, vLLM's include_stop_str_in_output false) and the run
//                   stopped after the token that completed it.
//   interrupted     the interrupt flag (Ctrl-C) was set; what was generated is kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/stop_reason.h"
#include "engine/engine.h"
#include "engine/request.h"
#include "model/config.h"

namespace hogwild {

/// What a plain completion asks for.
struct PlainRequest {
  std::vector<int32_t> prompt;    // token ids as fed (chat template and special tokens applied)
  int64_t max_tokens = 1;         // tokens to generate, >= 1 (capped where the context ends)
  int64_t max_context = 0;        // context length, prompt included; 0 = max_position_embeddings
                                  // (a larger value is capped there)
  std::vector<int32_t> stop_ids;  // ids that end it, besides the tokenizer's and config.json's
                                  // end-of-sequence ids (Model::stop_ids / stop_policy.h)
  bool ignore_eos = false;        // no id ends it (vLLM's ignore_eos; drawn ids are fed)
  SamplingParams sampling;        // seed: the worker's stream (plain generation with that seed)
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT) to stop after a token
};

/// The context a plain request runs in: max_context capped at the model's
/// max_position_embeddings (0 = that; a model without one: no limit).
int64_t plain_context(const ModelConfig& config, int64_t max_context);

/// The prompt against the model: not empty, within the context (with room for one token when
/// max_tokens > 0), every id in the vocabulary. Throws hogwild::Error saying which and by how
/// much (the context as "the context limit (--ctx-size)" when max_context set it, else "the
/// model's context (max_position_embeddings)").
void check_plain_prompt(const ModelConfig& config, const std::vector<int32_t>& prompt,
                        int64_t max_context, int64_t max_tokens);

/// The session of a plain completion: one worker, formatting "plain", no finisher (its text is
/// the output, not an answer), the worker's token cap = max_tokens or the room the context
/// leaves, device-contract sampling. Throws hogwild::Error as check_plain_prompt, and for
/// max_tokens < 1.
SessionRequest make_plain_request(const ModelConfig& config, PlainRequest request);

/// What a plain completion produced.
struct PlainResult {
  std::vector<int32_t> generated;  // drawn ids, in order (an end-of-sequence id that ended it too)
  // eos, stop_string, max_new_tokens, context_length or interrupted (the header's stop rules).
  StopReason stop_reason = StopReason::none;
  SessionResult session;  // the session's result (prompt_tokens, serial_steps, timings)
};

/// Runs a plain request alone on `engine` until it ends. on_token (may be empty) sees every
/// drawn id as it is drawn and returns true to stop after it (a stop string): the session is
/// cancelled after that engine step. Throws hogwild::Error when the request is refused
/// (Engine::submit) or a forward fails (the engine's error).
/// PRECONDITION: the engine runs no other session (its steps are this request's).
PlainResult run_plain(Engine& engine, SessionRequest request,
                      const std::function<bool(int32_t)>& on_token = {});

/// run_plain on an Engine of its own over `backend` and `codec` (IdCodec for ids without text),
/// created for this request. Throws as make_plain_request and run_plain.
/// PRECONDITION: nothing else uses the backend's cache meanwhile.
PlainResult generate_plain(Backend& backend, const TextCodec& codec, PlainRequest request,
                           const std::function<bool(int32_t)>& on_token = {});

/// The logits of every position of `seq`, as transformers' `model(input_ids).logits[0]` returns
/// them (`generate --dump-logits`): one pass over the sequence in a fresh block (freed after), at
/// most `chunk` tokens per forward; on_rows(logits, n_rows) receives them in order, logits
/// (n_rows, vocab_size) fp32. Without on_rows only the last position's row is computed (a
/// prefill). Returns the wall time of the forwards in seconds.
/// PRECONDITION: nothing else uses the backend's cache meanwhile; chunk >= 1.
double sequence_logits(Backend& backend, const std::vector<int32_t>& seq, int64_t chunk,
                       const std::function<void(const float*, int64_t)>& on_rows = {});

}  // namespace hogwild
