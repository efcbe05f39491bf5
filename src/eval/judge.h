// The optional collaboration score (docs/EVAL.md, "Collaboration score"): a judge model behind
// any OpenAI-compatible chat-completions endpoint (this project's own server among them) rates
// how the workers of one hogwild run worked together, on the paper's 1..6 scale, from the text
// the workers wrote. Off unless `hogwild eval --judge-url URL --judge-model NAME`.
//
// Request: POST <endpoint> {"model", "messages": [system: the rubric, user: the problem and the
// run's text], "temperature": 0, "max_tokens"}; "Authorization: Bearer <key>" when a key is set.
// Reply: choices[0].message.content; the score is the number after its last "Score:".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace hogwild::eval {

struct JudgeOptions {
  std::string url;      ///< http://host[:port][/path] or https://...; see judge_endpoint
  std::string model;    ///< the request's "model"
  std::string api_key;  ///< bearer token; "" = none (the CLI reads $HOGWILD_JUDGE_API_KEY)
  int64_t max_tokens = 1024;
  int timeout_seconds = 300;  ///< connection and read timeout of one request
};

/// One judged run.
struct JudgeScore {
  std::optional<int> score;  ///< 1..6; nullopt when the request failed or the reply had none
  std::string reply;         ///< the judge's text (may be empty)
  std::string error;         ///< "" or what went wrong (HTTP status, network, reply format)
};

/// The rubric (system message): six levels from "each worker solves the task alone" to "one team
/// with a plan, a split of the work and checks of each other's steps", in this project's words.
const std::string& judge_rubric();

/// The user message: the problem, the number of workers and the run's text (the shared history
/// after the prompt, then each worker's unfinished step).
std::string judge_request_text(std::string_view problem, std::string_view run_text, int workers);

/// The score of a reply: the integer after the last "Score:" (any case, spaces and "**" allowed
/// around it) when it is 1..6; nullopt otherwise.
std::optional<int> parse_judge_score(std::string_view reply);

/// (scheme://host[:port], path) of the chat-completions endpoint for a --judge-url: a path that
/// ends with "/chat/completions" is kept; one that ends with "/v1" gets "/chat/completions";
/// any other (also none) gets "/v1/chat/completions". Throws hogwild::Error for a URL that is not
/// http:// or https:// with a host.
std::pair<std::string, std::string> judge_endpoint(const std::string& url);

class Judge {
 public:
  /// Throws hogwild::Error for a bad URL or an empty model name (what to pass).
  explicit Judge(JudgeOptions options);
  /// One request (blocking). Never throws for network, HTTP or reply problems: the result's
  /// error says what happened and score is nullopt.
  JudgeScore score(std::string_view problem, std::string_view run_text, int workers) const;
  const JudgeOptions& options() const { return opt_; }

 private:
  JudgeOptions opt_;
  std::string origin_, path_;
};

}  // namespace hogwild::eval
