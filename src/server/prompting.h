// From a validated request to the sessions the engine runs (docs/SERVER.md "Requests"): the
// prompt's token ids (the model's chat template for chat requests, the formatting's collaboration
// prompt for hogwild requests), the sampling parameters over generation_config.json, the session
// options, and the context-length check with the token counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "sampling/generation_config.h"
#include "server/generation.h"
#include "server/reasoning.h"
#include "server/request.h"

namespace hogwild {
class Tokenizer;
namespace chat {
class ChatTemplate;
}
}  // namespace hogwild

namespace hogwild::server {

/// What the server serves: the loaded model's text side. Read-only after loading; used from
/// many HTTP threads at once (Tokenizer::encode and ChatTemplate::render are const).
struct ServedModel {
  std::string id;  // the model name in the API (/v1/models)
  const Tokenizer* tokenizer = nullptr;
  const chat::ChatTemplate* chat_template = nullptr;  // null when the model has none
  GenerationConfig generation;                        // sampling defaults
  std::vector<int32_t> stop_ids;  // end-of-sequence ids (engine/model.h Model::stop_ids)
  ModelConfig config;
  std::string default_format;  // its name or file (model_formatting_ref unless --format), for logs
  Formatting default_formatting;  // of hogwild requests without "format", resolved at load
  int64_t max_context = 0;        // tokens a view may hold (<= max_position_embeddings)
  std::string device;             // "cpu" / "cuda"
  // Reasoning output of chat completions (docs/SERVER.md "Reasoning output"): plain requests'
  // text split by `reasoning_parser`; hogwild requests' steps as reasoning unless `reasoning` is
  // off (--reasoning-parser none).
  bool reasoning = true;
  ReasoningParser reasoning_parser = ReasoningParser::none;
};

/// The sessions of one request (n choices; choice i samples with base seed + S i, S = max(8,
/// workers), so no two workers of the request share a seed). `seed_used` receives the base seed
/// (drawn at random when the request has none). Throws ApiError 400: the model has no chat template
/// (chat requests), the template fails on the messages, the prompt is empty, or the prompt plus
/// max_tokens (plain), or the prompt plus the first serial step's layout texts and step openings
/// plus one token (hogwild), exceeds the context (code "context_length_exceeded", with the token
/// counts). `chat_prompt` (may be null) receives the rendered prompt of a plain chat request (""
/// for other requests), from whose end the reasoning output reads where the generation starts
/// (reasoning.h think_start).
std::vector<GenerationRequest> build_generation(const CompletionRequest& r, const ServedModel& m,
                                                uint64_t* seed_used,
                                                std::string* chat_prompt = nullptr);

/// Worker names of a request's sessions (formatting worker_names; "assistant" for plain).
std::vector<std::string> worker_names(const GenerationRequest& g);

}  // namespace hogwild::server
