// The collaboration score over an OpenAI-compatible endpoint; see judge.h.
#include "eval/judge.h"

#include <httplib.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hogwild::eval {

const std::string& judge_rubric() {
  static const std::string text =
      R"(You read the notes of several workers who solved one task at the same time, each seeing what the others wrote as they wrote it. Rate how well they worked together, on this scale:
1 - No teamwork: each worker solves the whole task alone, as if the others were not there, and work is repeated.
2 - The workers mention each other now and then, but it does not change what they do; most work is repeated.
3 - The workers sometimes use a result another one found or avoid a part another one took, but a good deal of work is still repeated.
4 - The workers split the task or check each other's results on purpose; little work is repeated.
5 - The workers keep dividing the work and checking each other's steps throughout, and react quickly to what the others write.
6 - The workers act as one team: they agree on a plan, share out the parts, check each other's steps, correct mistakes at once, and waste no work.
Judge only the teamwork, not whether the final answer is right. Explain your rating in a few sentences, then end with a last line of the form "Score: N", where N is a whole number from 1 to 6.)";
  return text;
}

std::string judge_request_text(std::string_view problem, std::string_view run_text, int workers) {
  std::string s = "The task:\n";
  s += problem;
  s += "\n\nThe notes of the ";
  s += std::to_string(workers);
  s += " workers (finished steps in the order they were finished, then each worker's unfinished "
       "step):\n\n";
  s += run_text;
  s += "\n\nHow well did the workers work together? End with \"Score: N\".";
  return s;
}

std::optional<int> parse_judge_score(std::string_view reply) {
  std::string lower(reply);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = lower.rfind("score:");
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + 6;
  while (i < lower.size() && (lower[i] == ' ' || lower[i] == '*' || lower[i] == '\t')) ++i;
  size_t j = i;
  while (j < lower.size() && std::isdigit(static_cast<unsigned char>(lower[j]))) ++j;
  if (j == i || j - i > 2) return std::nullopt;
  if (j < lower.size() && (lower[j] == '.' || lower[j] == ',') && j + 1 < lower.size() &&
      std::isdigit(static_cast<unsigned char>(lower[j + 1])))
    return std::nullopt;  // "4.5": not a whole number
  const int v = std::stoi(std::string(lower.substr(i, j - i)));
  if (v < 1 || v > 6) return std::nullopt;
  return v;
}

std::pair<std::string, std::string> judge_endpoint(const std::string& url) {
  const size_t scheme = url.find("://");
  const std::string proto = scheme == std::string::npos ? "" : url.substr(0, scheme);
  if (proto != "http" && proto != "https")
    fail("--judge-url '{}' is not an http:// or https:// URL; give e.g. http://127.0.0.1:8000/v1",
         url);
  const size_t slash = url.find('/', scheme + 3);
  const std::string origin = url.substr(0, slash);
  if (origin.size() <= scheme + 3) fail("--judge-url '{}' has no host", url);
  std::string path = slash == std::string::npos ? "" : url.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.ends_with(s); };
  if (!ends("/chat/completions"))
    path += ends("/v1") ? "/chat/completions" : "/v1/chat/completions";
  return {origin, path};
}

Judge::Judge(JudgeOptions options) : opt_(std::move(options)) {
  if (opt_.model.empty())
    fail("--judge-url needs --judge-model: the model name the endpoint serves");
  std::tie(origin_, path_) = judge_endpoint(opt_.url);
}

JudgeScore Judge::score(std::string_view problem, std::string_view run_text, int workers) const {
  JudgeScore out;
  nlohmann::json body = {
      {"model", opt_.model},
      {"messages",
       {{{"role", "system"}, {"content", judge_rubric()}},
        {{"role", "user"}, {"content", judge_request_text(problem, run_text, workers)}}}},
      {"temperature", 0},
      {"max_tokens", opt_.max_tokens}};
  httplib::Client client(origin_);
  client.set_connection_timeout(opt_.timeout_seconds, 0);
  client.set_read_timeout(opt_.timeout_seconds, 0);
  client.set_write_timeout(opt_.timeout_seconds, 0);
  httplib::Headers headers;
  if (!opt_.api_key.empty()) headers.emplace("Authorization", "Bearer " + opt_.api_key);
  const auto res = client.Post(path_, headers,
                               body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                               "application/json");
  if (!res) {
    out.error = "judge " + origin_ + path_ + ": " + httplib::to_string(res.error());
    return out;
  }
  if (res->status != 200) {
    out.error = "judge " + origin_ + path_ + ": HTTP " + std::to_string(res->status) + ": " +
                res->body.substr(0, 300);
    return out;
  }
  const nlohmann::json reply = nlohmann::json::parse(res->body, nullptr, false);
  const nlohmann::json* content = nullptr;
  if (reply.is_object() && reply.contains("choices") && reply["choices"].is_array() &&
      !reply["choices"].empty()) {
    const nlohmann::json& c = reply["choices"][0];
    if (c.is_object() && c.contains("message") && c["message"].is_object() &&
        c["message"].contains("content") && c["message"]["content"].is_string())
      content = &c["message"]["content"];
  }
  if (!content) {
    out.error = "judge reply is not a chat completion (no choices[0].message.content): " +
                res->body.substr(0, 300);
    return out;
  }
  out.reply = content->get<std::string>();
  out.score = parse_judge_score(out.reply);
  if (!out.score) out.error = "the judge's reply has no \"Score: N\" line with N in 1..6";
  return out;
}

}  // namespace hogwild::eval
