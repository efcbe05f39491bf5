// OpenAI-shaped responses from a request's events (docs/SERVER.md "Responses", "Streaming"):
//  - streaming: SSE `data:` chunks — a first delta with the role per choice, content deltas, a
//    final chunk per choice with finish_reason, an optional usage chunk, `data: [DONE]`. Hogwild
//    requests add chunks with "choices": [] and a "hogwild" object (event session | step_start |
//    token | step_end | note | stats) carrying each worker's text with worker index and name,
//    step and serial step, so one connection carries the whole session;
//  - non-streaming: chat.completion / text_completion with usage and, for hogwild requests, the
//    per-worker transcript in "hogwild".
// Every string is valid UTF-8 (events carry decoded text; dumps replace invalid bytes).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/channel.h"
#include "server/reasoning.h"
#include "server/request.h"

namespace hogwild::server {

struct ResponseMeta {
  std::string id;  // response id = steering id
  Endpoint endpoint = Endpoint::chat;
  std::string model;
  int64_t created = 0;  // unix seconds
  int n = 1;
  bool hogwild = false;
  bool include_usage = false;
  std::vector<std::string> worker_names;
  uint64_t seed = 0;
  nlohmann::json options;  // hogwild: workers, layout, budget, collab_every, format
  // Reasoning output (chat only; docs/SERVER.md "Reasoning output"). Plain requests: the text is
  // split by `reasoning_parser` from `think_start` on. Hogwild requests with `hogwild_reasoning`:
  // the workers' steps are the reasoning, the answer the content.
  ReasoningParser reasoning_parser = ReasoningParser::none;
  ThinkStart think_start = ThinkStart::parser;
  bool hogwild_reasoning = false;
  bool include_reasoning = true;  // false: the reasoning is split off and dropped
};

/// "data: <json>\n\n" (invalid UTF-8 replaced).
std::string sse_data(const nlohmann::json& j);

class ResponseBuilder {
 public:
  explicit ResponseBuilder(ResponseMeta meta);
  /// Records the event; for streaming returns its SSE chunks ("" when it has none).
  std::string add(const Event& e);
  /// Streaming: the first chunks (role deltas; hogwild: the session event).
  std::string stream_start() const;
  /// Streaming: the usage chunk when asked for, then `data: [DONE]`.
  std::string stream_end() const;
  /// Non-streaming: the whole response.
  nlohmann::json response() const;
  /// The first error of a choice ("" when none).
  const std::string& error() const { return error_; }
  /// Token counts so far: {prompt_tokens, completion_tokens, total_tokens,
  /// prompt_tokens_details: {cached_tokens}} (OpenAI's and vLLM's fields; prompt_tokens and
  /// cached_tokens: the first choice's prompt and the tokens of it shared from the prefix cache).
  /// With n > 1 choices, prompt_tokens_details.cached_tokens_per_choice lists what each choice
  /// shared, by choice index (the choices after the first share the pages the first prefills).
  nlohmann::json usage() const;

 private:
  struct Step {
    int step = 0;
    std::string text;
    size_t opening = 0;  // bytes of the step's opening (prefix, check question) in text
    bool finished = false, collab_check = false;
    std::optional<std::string> answer;
  };
  struct Choice {
    std::string content;
    std::string reasoning;  // reasoning output: the thinking (plain) or the workers' steps
    std::optional<ReasoningSplitter> splitter;  // plain chat with a reasoning parser
    bool steps_told = false;                    // hogwild reasoning: the unfinished steps were sent
    std::string finish_reason;
    StopReason stop_reason = StopReason::none;
    std::vector<std::vector<Step>> workers;  // (n_workers) steps in order
    nlohmann::json notes = nlohmann::json::array();
    nlohmann::json stats;
    nlohmann::json method = nlohmann::json::object();  // worker_answers / outline, when given
    std::optional<std::string> answer;  // hogwild: the answer whole (content: cut by `stop`)
    int64_t prompt_tokens = 0, completion_tokens = 0;
    int64_t cached_tokens = 0;  // of prompt_tokens, shared from the prefix cache
  };

  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json hogwild_chunk(int choice, nlohmann::json ev) const;
  nlohmann::json content_choice(int index, const std::string& text,
                                const std::string& finish_reason) const;
  // Reasoning output: a chunk of reasoning and / or content deltas ("" when both are empty).
  std::string split_chunk(int index, const ReasoningSplitter::Delta& d) const;
  // Streamed content of a choice (split when it has a splitter); "" when nothing is sent.
  std::string add_content(int index, const std::string& text);
  // Hogwild reasoning: every worker's unfinished step (independent samples: every step, worker by
  // worker) joins the reasoning (once, before the answer); returns its chunk.
  std::string tell_unfinished_steps(int index);
  bool reasoning_output(const Choice& c) const;
  // The `done` event of a choice: the rest of its text, the stats, its final chunk.
  std::string finish(const Event& e);
  // Hogwild on the independent layout without Skeleton-of-Thought: the workers are samples.
  bool samples() const;
  bool skeleton() const;  // hogwild Skeleton-of-Thought
  nlohmann::json message(const Choice& c) const;
  static nlohmann::json stats_json(const Event& done);

  ResponseMeta meta_;
  std::vector<Choice> choices_;
  std::string error_;
};

}  // namespace hogwild::server
