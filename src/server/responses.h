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
  /// Token counts so far: {prompt_tokens, completion_tokens, total_tokens}.
  nlohmann::json usage() const;

 private:
  struct Step {
    int step = 0;
    std::string text;
    bool finished = false, collab_check = false;
    std::optional<std::string> answer;
  };
  struct Choice {
    std::string content;
    std::string finish_reason, stop_reason;
    std::vector<std::vector<Step>> workers;  // (n_workers) steps in order
    nlohmann::json notes = nlohmann::json::array();
    nlohmann::json stats;
    std::optional<std::string> answer;
    int64_t prompt_tokens = 0, completion_tokens = 0;
  };

  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json hogwild_chunk(int choice, nlohmann::json ev) const;
  nlohmann::json content_choice(int index, const std::string& text,
                                const std::string& finish_reason) const;
  static nlohmann::json stats_json(const Event& done);

  ResponseMeta meta_;
  std::vector<Choice> choices_;
  std::string error_;
};

}  // namespace hogwild::server
