#include "server/responses.h"

#include <numeric>

namespace hogwild::server {

using json = nlohmann::json;

std::string sse_data(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

ResponseBuilder::ResponseBuilder(ResponseMeta meta) : meta_(std::move(meta)) {
  choices_.resize(meta_.n);
  for (auto& c : choices_) {
    c.workers.resize(meta_.worker_names.size());
    if (meta_.endpoint == Endpoint::chat && !meta_.hogwild &&
        meta_.reasoning_parser != ReasoningParser::none)
      c.splitter.emplace(meta_.reasoning_parser, meta_.think_start);
  }
}

namespace {
// An option of a hogwild request (null when absent).
json option(const json& options, const char* key) {
  return options.is_object() && options.contains(key) ? options[key] : json();
}
}  // namespace

bool ResponseBuilder::skeleton() const {
  return meta_.hogwild && option(meta_.options, "skeleton") == true;
}

bool ResponseBuilder::samples() const {
  return meta_.hogwild && option(meta_.options, "layout") == "independent" && !skeleton();
}

bool ResponseBuilder::reasoning_output(const Choice& c) const {
  return c.splitter ||
         (meta_.endpoint == Endpoint::chat && meta_.hogwild && meta_.hogwild_reasoning);
}

std::string ResponseBuilder::split_chunk(int index, const ReasoningSplitter::Delta& d) const {
  const bool reasoning = meta_.include_reasoning && !d.reasoning.empty();
  if (!reasoning && d.content.empty()) return "";
  json delta = json::object();
  if (reasoning) delta["reasoning_content"] = d.reasoning;
  if (!d.content.empty()) delta["content"] = d.content;
  return sse_data(chunk(json::array(
      {{{"index", index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})));
}

std::string ResponseBuilder::add_content(int index, const std::string& text) {
  Choice& c = choices_[index];
  if (c.splitter) {
    const ReasoningSplitter::Delta d = c.splitter->push(text);
    c.reasoning += d.reasoning;
    c.content += d.content;
    return split_chunk(index, d);
  }
  std::string out = reasoning_output(c) ? tell_unfinished_steps(index) : "";
  c.content += text;
  return out + sse_data(chunk(json::array({content_choice(index, text, "")})));
}

std::string ResponseBuilder::tell_unfinished_steps(int index) {
  Choice& c = choices_[index];
  if (c.steps_told) return "";
  c.steps_told = true;
  // Independent samples: each worker's whole text, in worker order; else the unfinished steps.
  // Texts apart by a blank line (a finished step ends with its separator already).
  std::string text;
  for (const auto& steps : c.workers)
    for (const Step& s : steps) {
      if ((s.finished && !samples()) || s.text.size() <= s.opening) continue;
      if (!text.empty() && !text.ends_with("\n\n")) text += "\n\n";
      text += s.text;
    }
  c.reasoning += text;
  return split_chunk(index, {text, ""});
}

json ResponseBuilder::message(const Choice& c) const {
  json m = {{"role", "assistant"}, {"content", c.content}};
  if (!reasoning_output(c)) return m;
  const bool thought = !c.splitter || c.splitter->has_reasoning();
  m["reasoning_content"] = thought && meta_.include_reasoning ? json(c.reasoning) : json(nullptr);
  if (thought && c.content.empty()) m["content"] = nullptr;  // it ended inside the thinking
  return m;
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
          {"prompt_cached_tokens", d.prompt_cached_tokens},
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
      if (auto* ws = worker(e.worker))
        ws->push_back({e.step, e.text, e.text.size(), false, e.collab_check, {}});
      return sse_data(hogwild_chunk(e.choice, {{"event", "step_start"},
                                               {"worker", e.worker},
                                               {"name", name(e.worker)},
                                               {"step", e.step},
                                               {"text", e.text},
                                               {"collab_check", e.collab_check}}));
    }
    case K::token: {
      if (auto* ws = worker(e.worker)) {
        if (ws->empty() || ws->back().finished) ws->push_back({e.step, "", 0, false, false, {}});
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
        if (ws->empty() || ws->back().finished) ws->push_back({e.step, "", 0, false, false, {}});
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
      std::string out = sse_data(hogwild_chunk(e.choice, ev));
      // The finished step joins the shared history: reasoning (independent samples: at the end).
      if (reasoning_output(c) && !samples()) {
        c.reasoning += e.text;
        out += split_chunk(e.choice, {e.text, ""});
      }
      return out;
    }
    case K::note: {
      json n = {{"author", e.author}, {"text", e.text}, {"serial_step", e.serial_step}};
      c.notes.push_back(n);
      n["event"] = "note";
      return sse_data(hogwild_chunk(e.choice, n));
    }
    case K::content:
      return add_content(e.choice, e.text);
    case K::done:
      return finish(e);
  }
  return "";
}

std::string ResponseBuilder::finish(const Event& e) {
  Choice& c = choices_[e.choice];
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
  c.answer = e.answer;
  c.prompt_tokens = e.prompt_tokens;
  c.cached_tokens = e.prompt_cached_tokens;
  c.completion_tokens =
      std::accumulate(e.tokens_per_worker.begin(), e.tokens_per_worker.end(), int64_t{0});
  c.stats = stats_json(e);
  if (samples()) {
    json votes = json::array();
    for (const auto& a : e.worker_answers) votes.push_back(a ? json(*a) : json(nullptr));
    c.method["worker_answers"] = votes;
  }
  if (skeleton()) c.method["outline"] = e.outline;
  std::string out;
  if (c.splitter) {
    const ReasoningSplitter::Delta d = c.splitter->flush();
    c.reasoning += d.reasoning;
    c.content += d.content;
    out += split_chunk(e.choice, d);
  } else if (reasoning_output(c)) {
    out += tell_unfinished_steps(e.choice);
  }
  if (meta_.hogwild) {
    json ev = {{"event", "stats"},
               {"stop_reason", std::string(stop_reason_name(e.stop_reason))},
               {"answer", c.answer.value_or("")},
               {"stats", c.stats}};
    ev.update(c.method);
    out += sse_data(hogwild_chunk(e.choice, ev));
  }
  out += sse_data(chunk(json::array({content_choice(e.choice, "", e.finish_reason)})));
  return out;
}

json ResponseBuilder::usage() const {
  int64_t p = choices_.empty() ? 0 : choices_[0].prompt_tokens, g = 0;
  const int64_t cached = choices_.empty() ? 0 : choices_[0].cached_tokens;
  for (auto& c : choices_) g += c.completion_tokens;
  json details = {{"cached_tokens", cached}};
  if (choices_.size() > 1) {
    json per = json::array();
    for (auto& c : choices_) per.push_back(c.cached_tokens);
    details["cached_tokens_per_choice"] = std::move(per);
  }
  return {{"prompt_tokens", p},
          {"completion_tokens", g},
          {"total_tokens", p + g},
          {"prompt_tokens_details", std::move(details)}};
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
      choices.push_back(
          {{"index", i}, {"message", message(c)}, {"logprobs", nullptr}, {"finish_reason", fr}});
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
      json one = {{"workers", workers},
                  {"notes", c.notes},
                  {"stop_reason", std::string(stop_reason_name(c.stop_reason))},
                  {"answer", c.answer.value_or("")},
                  {"stats", c.stats}};
      one.update(c.method);
      hc.push_back(std::move(one));
    }
    j["hogwild"] = {{"session_id", meta_.id},
                    {"seed", meta_.seed},
                    {"options", meta_.options},
                    {"choices", hc}};
  }
  return j;
}

}  // namespace hogwild::server
