#include "server/responses.h"

#include <numeric>

namespace hogwild::server {

using json = nlohmann::json;

std::string sse_data(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

ResponseBuilder::ResponseBuilder(ResponseMeta meta) : meta_(std::move(meta)) {
  choices_.resize(meta_.n);
  for (auto& c : choices_) c.workers.resize(meta_.worker_names.size());
}

json ResponseBuilder::chunk(json choices) const {
  json j = {
      {"id", meta_.id},
      {"object", meta_.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
      {"created", meta_.created},
      {"model", meta_.model},
      {"choices", std::move(choices)}};
  if (meta_.include_usage) j["usage"] = nullptr;
  return j;
}

json ResponseBuilder::hogwild_chunk(int choice, json ev) const {
  ev["choice"] = choice;
  json j = chunk(json::array());
  j["hogwild"] = std::move(ev);
  return j;
}

json ResponseBuilder::content_choice(int index, const std::string& text,
                                     const std::string& finish_reason) const {
  json fr = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  if (meta_.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (!text.empty()) delta["content"] = text;
    return {{"index", index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", fr}};
  }
  return {{"index", index}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", fr}};
}

json ResponseBuilder::stats_json(const Event& d) {
  const int64_t total =
      std::accumulate(d.tokens_per_worker.begin(), d.tokens_per_worker.end(), int64_t{0});
  json per = json::array();
  for (int64_t t : d.tokens_per_worker)
    per.push_back(d.decode_seconds > 0 ? static_cast<double>(t) / d.decode_seconds : 0.0);
  return {{"serial_steps", d.serial_steps},
          {"prompt_tokens", d.prompt_tokens},
          {"tokens_per_worker", d.tokens_per_worker},
          {"total_tokens", total},
          {"prefill_seconds", d.prefill_seconds},
          {"decode_seconds", d.decode_seconds},
          {"finisher_seconds", d.finisher_seconds},
          {"tokens_per_second", d.decode_seconds > 0 ? total / d.decode_seconds : 0.0},
          {"tokens_per_second_per_worker", per}};
}

std::string ResponseBuilder::stream_start() const {
  std::string out;
  for (int i = 0; i < meta_.n; ++i) {
    json c;
    if (meta_.endpoint == Endpoint::chat)
      c = {{"index", i},
           {"delta", {{"role", "assistant"}, {"content", ""}}},
           {"logprobs", nullptr},
           {"finish_reason", nullptr}};
    else
      c = content_choice(i, "", "");
    out += sse_data(chunk(json::array({c})));
  }
  if (meta_.hogwild)
    out += sse_data(hogwild_chunk(0, {{"event", "session"},
                                      {"session_id", meta_.id},
                                      {"workers", meta_.worker_names},
                                      {"seed", meta_.seed},
                                      {"options", meta_.options}}));
  return out;
}

std::string ResponseBuilder::add(const Event& e) {
  using K = Event::Kind;
  if (e.choice < 0 || e.choice >= static_cast<int>(choices_.size())) return "";
  Choice& c = choices_[e.choice];
  auto name = [&](int w) {
    return w >= 0 && w < static_cast<int>(meta_.worker_names.size()) ? meta_.worker_names[w]
                                                                     : std::string();
  };
  auto worker = [&](int w) -> std::vector<Step>* {
    if (w < 0 || w >= static_cast<int>(c.workers.size())) return nullptr;
    return &c.workers[w];
  };
  switch (e.kind) {
    case K::accepted:
    case K::started:
      return "";
    case K::step_start: {
      if (auto* ws = worker(e.worker)) ws->push_back({e.step, e.text, false, e.collab_check, {}});
      return sse_data(hogwild_chunk(e.choice, {{"event", "step_start"},
                                               {"worker", e.worker},
                                               {"name", name(e.worker)},
                                               {"step", e.step},
                                               {"text", e.text},
                                               {"collab_check", e.collab_check}}));
    }
    case K::token: {
      if (auto* ws = worker(e.worker)) {
        if (ws->empty() || ws->back().finished) ws->push_back({e.step, "", false, false, {}});
        ws->back().text += e.text;
      }
      return sse_data(hogwild_chunk(e.choice, {{"event", "token"},
                                               {"worker", e.worker},
                                               {"name", name(e.worker)},
                                               {"step", e.step},
                                               {"serial_step", e.serial_step},
                                               {"text", e.text}}));
    }
    case K::step_end: {
      if (auto* ws = worker(e.worker)) {
        if (ws->empty() || ws->back().finished) ws->push_back({e.step, "", false, false, {}});
        ws->back().text = e.text;  // the whole step as the session saw it
        ws->back().finished = true;
        ws->back().answer = e.answer;
      }
      json ev = {{"event", "step_end"},
                 {"worker", e.worker},
                 {"name", name(e.worker)},
                 {"step", e.step},
                 {"text", e.text}};
      if (e.answer) ev["answer"] = *e.answer;
      return sse_data(hogwild_chunk(e.choice, ev));
    }
    case K::note: {
      json n = {{"author", e.author}, {"text", e.text}, {"serial_step", e.serial_step}};
      c.notes.push_back(n);
      n["event"] = "note";
      return sse_data(hogwild_chunk(e.choice, n));
    }
    case K::content:
      c.content += e.text;
      return sse_data(chunk(json::array({content_choice(e.choice, e.text, "")})));
    case K::done: {
      if (e.error) {
        if (error_.empty()) error_ = *e.error;
        c.finish_reason = "error";
        return sse_data({{"error",
                          {{"message", "the session failed: " + *e.error},
                           {"type", "server_error"},
                           {"param", nullptr},
                           {"code", "session_failed"}}}});
      }
      c.finish_reason = e.finish_reason;
      c.stop_reason = e.stop_reason;
      c.prompt_tokens = e.prompt_tokens;
      c.completion_tokens =
          std::accumulate(e.tokens_per_worker.begin(), e.tokens_per_worker.end(), int64_t{0});
      c.stats = stats_json(e);
      std::string out;
      if (meta_.hogwild)
        out += sse_data(hogwild_chunk(e.choice, {{"event", "stats"},
                                                 {"stop_reason", e.stop_reason},
                                                 {"answer", c.content},
                                                 {"stats", c.stats}}));
      out += sse_data(chunk(json::array({content_choice(e.choice, "", e.finish_reason)})));
      return out;
    }
  }
  return "";
}

json ResponseBuilder::usage() const {
  int64_t p = choices_.empty() ? 0 : choices_[0].prompt_tokens, g = 0;
  for (auto& c : choices_) g += c.completion_tokens;
  return {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
}

std::string ResponseBuilder::stream_end() const {
  std::string out;
  if (meta_.include_usage) {
    json j = chunk(json::array());
    j["usage"] = usage();
    out += sse_data(j);
  }
  return out + "data: [DONE]\n\n";
}

json ResponseBuilder::response() const {
  json choices = json::array();
  for (int i = 0; i < meta_.n; ++i) {
    const Choice& c = choices_[i];
    json fr = c.finish_reason.empty() ? json(nullptr) : json(c.finish_reason);
    if (meta_.endpoint == Endpoint::chat)
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", c.content}}},
                         {"logprobs", nullptr},
                         {"finish_reason", fr}});
    else
      choices.push_back(
          {{"index", i}, {"text", c.content}, {"logprobs", nullptr}, {"finish_reason", fr}});
  }
  json j = {{"id", meta_.id},
            {"object", meta_.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
            {"created", meta_.created},
            {"model", meta_.model},
            {"choices", choices},
            {"usage", usage()}};
  if (meta_.hogwild) {
    json hc = json::array();
    for (const Choice& c : choices_) {
      json workers = json::array();
      for (size_t w = 0; w < c.workers.size(); ++w) {
        json steps = json::array();
        for (const Step& s : c.workers[w]) {
          json js = {{"step", s.step},
                     {"text", s.text},
                     {"finished", s.finished},
                     {"collab_check", s.collab_check}};
          if (s.answer) js["answer"] = *s.answer;
          steps.push_back(js);
        }
        workers.push_back({{"worker", w}, {"name", meta_.worker_names[w]}, {"steps", steps}});
      }
      hc.push_back({{"workers", workers},
                    {"notes", c.notes},
                    {"stop_reason", c.stop_reason},
                    {"answer", c.content},
                    {"stats", c.stats}});
    }
    j["hogwild"] = {{"session_id", meta_.id},
                    {"seed", meta_.seed},
                    {"options", meta_.options},
                    {"choices", hc}};
  }
  return j;
}

}  // namespace hogwild::server
