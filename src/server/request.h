// The body of POST /v1/chat/completions and /v1/completions, parsed and validated (docs/SERVER.md
// "Requests"). Every field clients rely on is checked for type and range here, before the request
// reaches the engine; a mistake throws ApiError (400, or 404 for an unknown model) naming the
// field. Fields that change the output in ways the engine cannot honour (tools, logprobs,
// penalties other than repetition_penalty, logit_bias, ...) are refused rather than ignored. The
// rules of a hogwild request that need the served model (workers against the formatting's names,
// a kv_budget against the prompt, an empty problem) are checked when it is built (prompting.h:
// make_request, as for `hogwild run`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hogwild/forgetting.h"
#include "hogwild/layout.h"

namespace hogwild::server {

enum class Endpoint { chat, completion };

/// The `hogwild` object of a request: a collaborative session instead of a plain completion.
struct HogwildParams {
  int workers = 2;  // the formatting's worker names and RequestLimits::max_workers (checked when
                    // the request is built, prompting.h); independent layout: 1..64 (the table)
                    // and RequestLimits::max_samples
  Layout layout = Layout::combined;
  int64_t budget = 0;         // serial steps after the prefill; 0 = until an answer
  int64_t collab_every = -1;  // generated tokens between collaboration checks; -1 = formatting
  std::string format;         // built-in formatting name; "" = the model family's math one
  int64_t kv_budget = 0;      // tokens of the shared history still read; 0 = no KV budget
  KvPolicy kv_policy = KvPolicy::evict;  // what happens at the budget (hogwild/forgetting.h)
  double kv_redundancy = 0;  // R-KV's 1 - lambda in [0, 1] (ForgetPolicy::redundancy_weight)
  // Skeleton-of-Thought (independent layout): an outline, then workers expand its points
  // (workers = the most points). Layout independent alone: self-consistency (the workers are
  // independent samples, the answer their vote).
  bool skeleton = false;
};

/// One chat message with its text content (parts of type "text" joined).
struct ChatMessage {
  std::string role;  // "system" (also for "developer"), "user", "assistant"
  std::string content;
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::chat;
  std::string model;                  // as given; "" = the served model
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completion
  std::optional<int64_t> max_tokens;  // max_completion_tokens or max_tokens: per worker
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;  // 0 = off (-1 is taken as off too)
  std::optional<int64_t> seed;
  std::vector<std::string> stop;  // non-empty strings
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int n = 1;                   // choices
  nlohmann::ordered_json template_kwargs =
      nlohmann::ordered_json::object();  // chat_template_kwargs
  std::optional<HogwildParams> hogwild;
  // Chat: the thinking in `reasoning_content`, apart from the content (docs/SERVER.md "Reasoning
  // output"); false: the whole text in `content`, as without a reasoning parser.
  bool include_reasoning = true;
};

/// Limits a request is checked against (max_n by parse_completion_request, the workers by
/// build_generation, after the rules of the request builder).
struct RequestLimits {
  int max_n = 8;         // choices per request
  int max_workers = 8;   // hogwild.workers (within the formatting's names)
  int max_samples = 64;  // hogwild.workers on the independent layout (samples, outline points)
  // Value ranges (max_tokens, budget, seed, temperature, stop bytes, ...) are the table's:
  // core/request_fields.h.
};

/// Parses and validates a request body (bytes as received). Throws ApiError: 400 for invalid
/// UTF-8, malformed JSON, objects and arrays nested deeper than 64 levels, a number beyond a
/// double (code "invalid_number", param the path of the field), a non-object body, a missing or
/// mistyped field, an out-of-range value, an empty stop string, an unsupported feature; 404 (code
/// "model_not_found") when `model` is given and is neither `served_model` nor "".
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint,
                                           const std::string& served_model,
                                           const RequestLimits& limits = {});

/// A note for live steering.
struct NoteRequest {
  std::string author = "User";  // "name" of the message (the formatting's note_prefix {name})
  std::string text;
};

/// Parses the body of POST /v1/hogwild/sessions/{id}/messages: {"content": "..."}, optionally
/// with "role": "user" and "name" (1..64 bytes, one line). The text has 1..max_bytes bytes.
/// Throws ApiError 400 otherwise (also for a body that parse_completion_request refuses as JSON).
NoteRequest parse_note_request(std::string_view body, size_t max_bytes = 4096);

/// True when `s` is valid UTF-8 (utf8proc).
bool valid_utf8(std::string_view s);

}  // namespace hogwild::server
