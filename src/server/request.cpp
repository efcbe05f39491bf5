#include "server/request.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/request_fields.h"
#include "hogwild/formatting.h"
#include "hogwild/request_check.h"
#include "server/api_error.h"

namespace hogwild::server {

using json = nlohmann::json;

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0 || cp < 0) return false;
    p += n;
    left -= n;
  }
  return true;
}

namespace {

const char* type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

// Where the parser is in the document ("messages[0].content", "hogwild.budget"), followed
// through the parser's callback so that a value it cannot hold can be named.
constexpr size_t kMaxJsonDepth = 64;

class JsonPath {
 public:
  bool event(int depth, json::parse_event_t ev, const json& parsed) {
    (void)depth;
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // Parsing is iterative, but copying, dumping and rendering a value recurse: a body of
        // a few MB nested a million deep would overflow the stack of whoever walks it.
        if (frames_.size() >= kMaxJsonDepth) {
          const std::string where = str();
          throw bad_request(fmt::format("the request body nests objects and arrays deeper than {} "
                                        "levels{}{}; flatten it",
                                        kMaxJsonDepth, where.empty() ? "" : " at ", where),
                            where, "invalid_json");
        }
        frames_.push_back({ev == json::parse_event_t::array_start, {}, 0});
        break;
      case json::parse_event_t::key:
        if (!frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        [[fallthrough]];
      case json::parse_event_t::value:
        if (!frames_.empty() && frames_.back().array) frames_.back().count += 1;
        break;
    }
    return true;
  }
  std::string str() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.array)
        p += fmt::format("[{}]", f.count);
      else
        p += (p.empty() ? "" : ".") + f.key;
    }
    return p;
  }

 private:
  struct Frame {
    bool array;
    std::string key;  // the object's key being read
    size_t count;     // the array's elements read so far
  };
  std::vector<Frame> frames_;
};

json parse_body(std::string_view body) {
  if (!valid_utf8(body))
    throw bad_request("the request body is not valid UTF-8; send JSON encoded as UTF-8", "",
                      "invalid_utf8");
  JsonPath path;
  try {
    return json::parse(body, [&path](int depth, json::parse_event_t ev, json& parsed) {
      return path.event(depth, ev, parsed);
    });
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw bad_request(fmt::format("the request body is not valid JSON: {}", what), "",
                      "invalid_json");
  } catch (const json::out_of_range& e) {  // a number beyond a double, such as 1e999
    const std::string where = path.str();
    throw bad_request(
        where.empty()
            ? std::string("the request body holds a number too large for a double (such as "
                          "1e999); give a finite number")
            : fmt::format("'{}' is a number too large for a double (such as 1e999); give a finite "
                          "number in its range",
                          where),
        where, "invalid_number");
  }
}

// Typed field readers: absent or null gives nullopt; a wrong type throws naming the field.
const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> get_int(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw bad_request(
          fmt::format("'{}' is too large ({}); it must fit in a signed 64-bit integer", path,
                      v->dump()),
          path);
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  // An integer beyond 64 bits (2^70) reaches us as a double: it is too large, not a fraction.
  if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() &&
      std::fabs(v->get<double>()) >= 0x1p63)
    throw bad_request(fmt::format("'{}' is too {} ({}); it must fit in a signed 64-bit integer",
                                  path, v->get<double>() > 0 ? "large" : "small", v->dump()),
                      path);
  // A whole number written with a fraction part (2.0, as some clients send integers) is that
  // integer, as pydantic-validated servers (vLLM) take it; 2.5 is not.
  if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>())
    return static_cast<int64_t>(v->get<double>());
  if (v->is_number_float())
    throw bad_request(fmt::format("'{}' must be an integer, got {}", path, v->dump()), path);
  if (!v->is_number_integer())
    throw bad_request(fmt::format("'{}' must be an integer, got {}", path, type_of(*v)), path);
  return v->get<int64_t>();
}

std::optional<double> get_number(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number())
    throw bad_request(fmt::format("'{}' must be a number, got {}", path, type_of(*v)), path);
  return v->get<double>();
}

std::optional<bool> get_bool(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean())
    throw bad_request(fmt::format("'{}' must be a boolean, got {}", path, type_of(*v)), path);
  return v->get<bool>();
}

std::optional<std::string> get_string(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string())
    throw bad_request(fmt::format("'{}' must be a string, got {}", path, type_of(*v)), path);
  return v->get<std::string>();
}

// A field checked against the table of ranges (core/request_fields.h): its sentence, with the
// request's JSON path as the error's param.
template <typename Check>
void in_table(const std::string& param, Check&& check) {
  try {
    check();
  } catch (const RequestError& e) {
    throw bad_request(e.what(), param);
  }
}

void check_real(const std::optional<double>& v, RequestField f, const char* name) {
  if (v) in_table(name, [&] { check_real_field(f, *v); });
}

// Fields whose non-default values the engine cannot honour.
void refuse_unsupported(const json& j) {
  auto refuse = [](const char* key, const char* why) {
    throw bad_request(fmt::format("'{}' is not supported by this server: {}", key, why), key,
                      "unsupported_parameter");
  };
  if (const json* v = field(j, "tools"); v && !(v->is_array() && v->empty()))
    refuse("tools", "there is no tool calling; leave it out");
  if (const json* v = field(j, "functions"); v && !(v->is_array() && v->empty()))
    refuse("functions", "there is no function calling; leave it out");
  if (const json* v = field(j, "logprobs"); v && !(v->is_boolean() && !v->get<bool>()))
    refuse("logprobs", "log-probabilities are not returned; leave it out or set it to false");
  if (field(j, "top_logprobs")) refuse("top_logprobs", "log-probabilities are not returned");
  if (const json* v = field(j, "logit_bias"); v && !(v->is_object() && v->empty()))
    refuse("logit_bias", "leave it out");
  for (const char* k : {"presence_penalty", "frequency_penalty"})
    if (const json* v = field(j, k); v && !(v->is_number() && v->get<double>() == 0.0))
      refuse(k, "use repetition_penalty (HF's, > 0; 1 = off) instead");
  if (const json* v = field(j, "response_format"))
    if (!v->is_object() || v->value("type", std::string()) != "text")
      refuse("response_format", "only {\"type\": \"text\"} is available");
  if (const json* v = field(j, "echo"); v && !(v->is_boolean() && !v->get<bool>()))
    refuse("echo", "leave it out or set it to false");
  if (const json* v = field(j, "best_of"); v && !(v->is_number_integer() && v->get<int64_t>() == 1))
    refuse("best_of", "use n for several choices");
  if (const json* v = field(j, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    refuse("suffix", "there is no insertion mode; leave it out");
}

std::string message_content(const json& m, size_t i) {
  const std::string path = fmt::format("messages[{}].content", i);
  const json* c = field(m, "content");
  if (!c) throw bad_request(fmt::format("'{}' is missing", path), path);
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array())
    throw bad_request(
        fmt::format("'{}' must be a string or an array of text parts, got {}", path, type_of(*c)),
        path);
  std::string text;
  for (size_t k = 0; k < c->size(); ++k) {
    const json& part = (*c)[k];
    const std::string pp = fmt::format("{}[{}]", path, k);
    if (!part.is_object() || part.value("type", std::string()) != "text" ||
        !part.contains("text") || !part["text"].is_string())
      throw bad_request(
          fmt::format("'{}' must be {{\"type\": \"text\", \"text\": \"...\"}}; only text parts are "
                      "supported",
                      pp),
          pp);
    text += part["text"].get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> parse_messages(const json& j) {
  const json* ms = field(j, "messages");
  if (!ms) throw bad_request("'messages' is missing; give an array of {role, content}", "messages");
  if (!ms->is_array())
    throw bad_request(fmt::format("'messages' must be an array, got {}", type_of(*ms)), "messages");
  if (ms->empty()) throw bad_request("'messages' is empty; give at least one message", "messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string path = fmt::format("messages[{}]", i);
    if (!m.is_object())
      throw bad_request(fmt::format("'{}' must be an object, got {}", path, type_of(m)), path);
    std::optional<std::string> role = get_string(m, "role", path + ".role");
    if (!role) throw bad_request(fmt::format("'{}.role' is missing", path), path + ".role");
    if (*role == "developer") role = "system";
    if (*role != "system" && *role != "user" && *role != "assistant")
      throw bad_request(
          fmt::format("'{}.role' is '{}'; use system, developer, user or assistant", path, *role),
          path + ".role");
    out.push_back({*role, message_content(m, i)});
  }
  return out;
}

std::string parse_prompt(const json& j) {
  const json* p = field(j, "prompt");
  if (!p) throw bad_request("'prompt' is missing; give the text to complete", "prompt");
  if (p->is_string()) return p->get<std::string>();
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) return (*p)[0].get<std::string>();
  throw bad_request(
      fmt::format("'prompt' must be a string (or an array of one string), got {}", type_of(*p)),
      "prompt");
}

std::vector<std::string> parse_stop(const json& j) {
  const json* s = field(j, "stop");
  if (!s) return {};
  std::vector<std::string> out;
  if (s->is_string()) {
    out.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    for (size_t i = 0; i < s->size(); ++i) {
      if (!(*s)[i].is_string())
        throw bad_request(fmt::format("'stop[{}]' must be a string, got {}", i, type_of((*s)[i])),
                          "stop");
      out.push_back((*s)[i].get<std::string>());
    }
  } else {
    throw bad_request(
        fmt::format("'stop' must be a string or an array of strings, got {}", type_of(*s)), "stop");
  }
  in_table("stop", [&] { check_stop_strings(out); });
  return out;
}

// The `hogwild` object: types, names and the ranges a field has alone, in the sentences of
// hogwild/request_check.h that make_request repeats when the request is built (prompting.h).
HogwildParams parse_hogwild(const json& h) {
  if (!h.is_object())
    throw bad_request(fmt::format("'hogwild' must be an object, got {}", type_of(h)), "hogwild");
  static const char* kKeys[] = {"workers",  "layout",    "budget",    "collab_every", "format",
                                "skeleton", "kv_budget", "kv_policy", "kv_redundancy"};
  for (auto& [k, v] : h.items())
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys))
      throw bad_request(fmt::format("'hogwild.{}' is not a known key; use workers, layout, budget, "
                                    "collab_every, format, skeleton, kv_budget, kv_policy or "
                                    "kv_redundancy",
                                    k),
                        "hogwild." + k);
  HogwildParams p;
  const std::optional<int64_t> w = get_int(h, "workers", "hogwild.workers");
  if (auto l = get_string(h, "layout", "hogwild.layout")) {
    try {  // the sentence of `hogwild run --layout`
      p.layout = parse_layout(*l);
    } catch (const Error& e) {
      throw bad_request(e.what(), "hogwild.layout");
    }
  }
  if (auto b = get_int(h, "budget", "hogwild.budget")) {
    in_table("hogwild.budget", [&] { check_field(RequestField::budget, *b); });
    p.budget = *b;
  }
  if (auto c = get_int(h, "collab_every", "hogwild.collab_every")) {
    in_table("hogwild.collab_every", [&] { check_field(RequestField::collab_every, *c); });
    p.collab_every = *c;
  }
  if (auto f = get_string(h, "format", "hogwild.format")) {
    auto names = builtin_formatting_names();
    if (std::find(names.begin(), names.end(), *f) == names.end())
      throw bad_request(
          fmt::format("'hogwild.format' is '{}'; use one of: {}", *f, fmt::join(names, ", ")),
          "hogwild.format");
    p.format = *f;
  }
  // Skeleton-of-Thought runs on the independent layout (hogwild/session.h).
  p.skeleton = get_bool(h, "skeleton", "hogwild.skeleton").value_or(false);
  if (p.skeleton && h.contains("layout") && p.layout != Layout::independent)
    throw bad_request(fmt::format("'hogwild.skeleton' runs on the independent layout, not '{}'; "
                                  "leave 'hogwild.layout' out",
                                  layout_name(p.layout)),
                      "hogwild.layout");
  if (p.skeleton) p.layout = Layout::independent;
  if (auto kb = get_int(h, "kv_budget", "hogwild.kv_budget")) {
    in_table("hogwild.kv_budget", [&] { check_kv_budget(*kb, p.layout, p.skeleton); });
    p.kv_budget = *kb;
  }
  if (auto kp = get_string(h, "kv_policy", "hogwild.kv_policy"))
    in_table("hogwild.kv_policy", [&] { p.kv_policy = check_kv_policy(*kp, p.kv_budget, 0); });
  if (auto kr = get_number(h, "kv_redundancy", "hogwild.kv_redundancy"))
    in_table("hogwild.kv_redundancy",
             [&] { p.kv_redundancy = check_kv_redundancy(*kr, p.kv_budget, p.kv_policy); });
  if (w) {
    // The table's range is the rule of independent workers; workers sharing a cache are bounded
    // by the formatting's names, which make_request checks with the formatting resolved
    // (prompting.h), as are the server's limits. A count beyond any range is refused here.
    if (p.layout == Layout::independent || *w < INT_MIN || *w > INT_MAX)
      in_table("hogwild.workers", [&] { check_field(RequestField::workers, *w); });
    p.workers = static_cast<int>(*w);
  }
  return p;
}

// max_tokens or max_completion_tokens (the same value when both are given); none = no limit.
std::optional<int64_t> parse_max_tokens(const json& j) {
  auto mt = get_int(j, "max_tokens", "max_tokens");
  auto mct = get_int(j, "max_completion_tokens", "max_completion_tokens");
  if (mt && mct && *mt != *mct)
    throw bad_request("give max_completion_tokens or max_tokens, not both with different values",
                      "max_tokens");
  const std::optional<int64_t> max_tokens = mct ? mct : mt;
  const char* mt_name = mct ? "max_completion_tokens" : "max_tokens";
  if (max_tokens) {
    in_table(mt_name, [&] { check_field(RequestField::max_tokens, *max_tokens); });
    // The API says "no limit" by leaving the field out: 0 is an error, as in OpenAI's.
    if (*max_tokens == 0)
      throw bad_request(
          fmt::format("{} is 0; leave it out for no limit, or give 1..{} tokens", mt_name,
                      static_cast<int64_t>(field_range(RequestField::max_tokens).hi)),
          mt_name);
  }
  return max_tokens;
}

// temperature, top_p, min_p, repetition_penalty, top_k (-1 = off, as 0), seed: each in its range.
void parse_sampling(const json& j, CompletionRequest& r) {
  r.temperature = get_number(j, "temperature", "temperature");
  check_real(r.temperature, RequestField::temperature, "temperature");
  r.top_p = get_number(j, "top_p", "top_p");
  check_real(r.top_p, RequestField::top_p, "top_p");
  r.min_p = get_number(j, "min_p", "min_p");
  check_real(r.min_p, RequestField::min_p, "min_p");
  r.repetition_penalty = get_number(j, "repetition_penalty", "repetition_penalty");
  check_real(r.repetition_penalty, RequestField::repetition_penalty, "repetition_penalty");
  r.top_k = get_int(j, "top_k", "top_k");
  if (r.top_k && *r.top_k == -1) r.top_k = 0;  // OpenAI-style clients send -1 for off
  if (r.top_k) in_table("top_k", [&] { check_field(RequestField::top_k, *r.top_k); });
  r.seed = get_int(j, "seed", "seed");
  if (r.seed) in_table("seed", [&] { check_field(RequestField::seed, *r.seed); });
}

// stream and stream_options (only with stream).
void parse_stream(const json& j, CompletionRequest& r) {
  r.stream = get_bool(j, "stream", "stream").value_or(false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object())
      throw bad_request(fmt::format("'stream_options' must be an object, got {}", type_of(*so)),
                        "stream_options");
    if (!r.stream)
      throw bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    r.include_usage =
        get_bool(*so, "include_usage", "stream_options.include_usage").value_or(false);
  }
}

// chat_template_kwargs and include_reasoning: /v1/chat/completions only.
void parse_chat_options(const json& j, Endpoint endpoint, CompletionRequest& r) {
  if (const json* k = field(j, "chat_template_kwargs")) {
    if (endpoint != Endpoint::chat)
      throw bad_request("'chat_template_kwargs' applies to /v1/chat/completions only",
                        "chat_template_kwargs");
    if (!k->is_object())
      throw bad_request(
          fmt::format("'chat_template_kwargs' must be an object, got {}", type_of(*k)),
          "chat_template_kwargs");
    r.template_kwargs = nlohmann::ordered_json::parse(k->dump());
    if (r.template_kwargs.contains("enable_thinking") &&
        !r.template_kwargs["enable_thinking"].is_boolean())
      throw bad_request("'chat_template_kwargs.enable_thinking' must be a boolean",
                        "chat_template_kwargs.enable_thinking");
  }
  if (auto inc = get_bool(j, "include_reasoning", "include_reasoning")) {
    if (endpoint != Endpoint::chat)
      throw bad_request("'include_reasoning' applies to /v1/chat/completions only",
                        "include_reasoning");
    r.include_reasoning = *inc;
  }
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint,
                                           const std::string& served_model,
                                           const RequestLimits& lim) {
  const json j = parse_body(body);
  if (!j.is_object())
    throw bad_request(fmt::format("the request body must be a JSON object, got {}", type_of(j)));
  CompletionRequest r;
  r.endpoint = endpoint;
  if (auto m = get_string(j, "model", "model")) {
    if (!m->empty() && *m != served_model)
      throw ApiError(
          404, "not_found_error",
          fmt::format("The model '{}' does not exist; this server serves '{}'", *m, served_model),
          "model", "model_not_found");
    r.model = *m;
  }
  refuse_unsupported(j);
  if (endpoint == Endpoint::chat)
    r.messages = parse_messages(j);
  else
    r.prompt = parse_prompt(j);
  r.max_tokens = parse_max_tokens(j);
  parse_sampling(j, r);
  r.stop = parse_stop(j);
  parse_stream(j, r);
  if (auto n = get_int(j, "n", "n")) {
    if (*n < 1 || *n > lim.max_n)
      throw bad_request(fmt::format("'n' is {}; it must be in 1..{}", *n, lim.max_n), "n");
    r.n = static_cast<int>(*n);
  }
  parse_chat_options(j, endpoint, r);
  if (const json* h = field(j, "hogwild")) r.hogwild = parse_hogwild(*h);
  return r;
}

NoteRequest parse_note_request(std::string_view body, size_t max_bytes) {
  const json j = parse_body(body);
  if (!j.is_object())
    throw bad_request(fmt::format("the request body must be a JSON object, got {}", type_of(j)));
  if (auto role = get_string(j, "role", "role"); role && *role != "user")
    throw bad_request(fmt::format("'role' is '{}'; a note is from the user", *role), "role");
  auto c = get_string(j, "content", "content");
  if (!c) throw bad_request("'content' is missing; give the note text", "content");
  if (c->find_first_not_of(" \t\r\n") == std::string::npos)
    throw bad_request("'content' is empty; give the note text", "content");
  if (c->size() > max_bytes)
    throw bad_request(fmt::format("'content' has {} bytes; give at most {}", c->size(), max_bytes),
                      "content");
  NoteRequest n;
  n.text = *c;
  if (auto name = get_string(j, "name", "name")) {
    if (name->empty() || name->size() > 64 || name->find_first_of("\r\n") != std::string::npos)
      throw bad_request("'name' must be 1..64 bytes on one line", "name");
    n.author = *name;
  }
  return n;
}

}  // namespace hogwild::server
