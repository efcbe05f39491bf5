// From a validated request to the sessions the engine runs (docs/SERVER.md "Requests"): the
// prompt's token ids (the model's chat template for chat requests, the formatting's collaboration
// prompt for hogwild requests), the sampling parameters over generation_config.json, the session
// options, and the context-length check with the token counts. Plain requests are built by
// make_plain_request (engine/plain.h), hogwild ones by make_request (engine/request.h): the
// builders of `hogwild generate` and `hogwild run`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/request_fields.h"
#include "engine/request.h"
#include "model/config.h"
#include "sampling/generation_config.h"
#include "server/generation.h"
#include "server/reasoning.h"
#include "server/request.h"

namespace hogwild::server {

/// What the server serves: the loaded model's text side. Read-only after loading; used from
/// many HTTP threads at once (Tokenizer::encode and ChatTemplate::render are const). As a
/// RequestModel (engine/request.h: tokenizer, chat template and its error, stop ids, max_context:
/// the served context, --max-context or max_position_embeddings, and default_formatting: of
/// hogwild requests without "format", resolved at load) it is what make_request builds hogwild
/// requests from, as for `hogwild run`.
struct ServedModel : RequestModel {
  std::string id;               // the model name in the API (/v1/models)
  GenerationConfig generation;  // sampling defaults
  ModelConfig config;
  std::string default_format;  // its name or file (model_formatting_ref unless --format), for logs
  std::string device;          // "cpu" / "cuda"
  // Reasoning output of chat completions (docs/SERVER.md "Reasoning output"): plain requests'
  // text split by `reasoning_parser`; hogwild requests' steps as reasoning unless `reasoning` is
  // off (--reasoning-parser none).
  bool reasoning = true;
  ReasoningParser reasoning_parser = ReasoningParser::none;
};

/// The JSON path of a request field (core/request_fields.h) in a request body of `endpoint`, the
/// `param` of its 400: "hogwild.workers" for a session's fields, "temperature" for sampling, the
/// problem "messages" (chat) or "prompt" (completions).
std::string request_param(RequestField field, Endpoint endpoint);

/// The sessions of one request (n choices; choice i samples with base seed + S i, S = max(8,
/// workers), so no two workers of the request share a seed). A hogwild request is built by
/// make_request (engine/request.h), as `hogwild run` builds its session: its RequestError is a 400
/// with the same sentence and request_param as `param` (RequestField::context, a prompt that
/// leaves no room for the first serial step: code "context_length_exceeded"), its other errors (a
/// chat template that cannot be used or fails) a 400 "formatting_error" on "hogwild.format".
/// `seed_used` receives the base seed (drawn at random when the request has none). Throws ApiError
/// 400 besides: more hogwild workers than `limits` allow (after the rules make_request checks), the
/// model has no chat template (chat requests), the template fails on the messages, the prompt is
/// empty, or the prompt plus max_tokens of a plain request exceeds the context (code
/// "context_length_exceeded", with the token counts). `chat_prompt` (may be null) receives the
/// rendered prompt of a plain chat request ("" for other requests), from whose end the reasoning
/// output reads where the generation starts (reasoning.h think_start).
std::vector<GenerationRequest> build_generation(const CompletionRequest& r, const ServedModel& m,
                                                const RequestLimits& limits, uint64_t* seed_used,
                                                std::string* chat_prompt = nullptr);

/// Worker names of a request's sessions (formatting worker_names; "assistant" for plain).
std::vector<std::string> worker_names(const GenerationRequest& g);

}  // namespace hogwild::server
