#include "server/prompting.h"

#include <algorithm>
#include <random>

#include "chat/chat_template.h"
#include "core/error.h"
#include "engine/plain.h"
#include "engine/request.h"
#include "hogwild/forgetting.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::server {

namespace {

SamplingParams sampling_for(const CompletionRequest& r, const GenerationConfig& g, uint64_t seed) {
  SamplingParams p = SamplingParams::from(g, seed);
  // As the CLI (apps/hogwild/sampling_flags.h): any sampling knob turns sampling on; temperature
  // 0 is greedy.
  if (r.temperature || r.top_k || r.top_p || r.min_p) p.do_sample = true;
  if (r.temperature) p.temperature = static_cast<float>(*r.temperature);
  if (r.top_k) p.top_k = *r.top_k;
  if (r.top_p) p.top_p = static_cast<float>(*r.top_p);
  if (r.min_p) p.min_p = static_cast<float>(*r.min_p);
  if (r.repetition_penalty) p.repetition_penalty = static_cast<float>(*r.repetition_penalty);
  return p;
}

std::string render_chat(const CompletionRequest& r, const ServedModel& m) {
  if (!m.chat_template)
    throw bad_request(fmt::format("the model '{}' has no chat template; use /v1/completions with "
                                  "a prompt",
                                  m.id),
                      "messages", "no_chat_template");
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (auto& msg : r.messages) msgs.push_back({{"role", msg.role}, {"content", msg.content}});
  try {
    return m.chat_template->render(msgs, true, r.template_kwargs);
  } catch (const Error& e) {
    throw bad_request(
        fmt::format("the model's chat template failed on these messages: {}", e.what()), "messages",
        "chat_template_error");
  }
}

// The problem of a hogwild request: the user messages of a chat (joined by blank lines), or the
// prompt of a completion.
std::string problem_text(const CompletionRequest& r) {
  if (r.endpoint == Endpoint::completion) return r.prompt;
  std::string p;
  for (auto& msg : r.messages)
    if (msg.role == "user") p += (p.empty() ? "" : "\n\n") + msg.content;
  return p;
}

void check_context(size_t prompt_tokens, int64_t completion, const ServedModel& m,
                   const CompletionRequest& r) {
  const int64_t total = static_cast<int64_t>(prompt_tokens) + completion;
  if (total <= m.max_context) return;
  const char* where = r.endpoint == Endpoint::chat ? "messages" : "prompt";
  throw bad_request(
      fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                  "tokens ({} in the {}, {} in the completion). Please reduce the length of the {} "
                  "or of the completion (max_tokens).",
                  m.max_context, total, prompt_tokens, where, completion, where),
      where, "context_length_exceeded");
}

// The server's own bound on the workers of a request (RequestLimits), beyond the rules that
// make_request checks (the table's range, the formatting's names).
void check_worker_limit(const HogwildParams& h, const RequestLimits& lim) {
  const bool independent = h.layout == Layout::independent;
  const int most = independent ? lim.max_samples : lim.max_workers;
  if (h.workers > most)
    throw bad_request(
        fmt::format("workers is {}; this server runs at most {} {} a request", h.workers, most,
                    h.skeleton    ? "outline points"
                    : independent ? "independent samples"
                                  : "workers"),
        "hogwild.workers");
}

// A hogwild request: the problem and the `hogwild` fields as the ProblemRequest that make_request
// (engine/request.h) builds, as for `hogwild run` (the same checks, in the same sentences), then
// the server's worker limit.
void fill_hogwild(GenerationRequest& g, const CompletionRequest& r, const ServedModel& m,
                  const RequestLimits& lim) {
  const HogwildParams& h = *r.hogwild;
  ProblemRequest p;
  p.problem = problem_text(r);
  p.formatting = h.format;  // a built-in name (request.cpp); "" = m.default_formatting
  p.workers = h.workers;
  p.layout = h.layout;
  p.skeleton = h.skeleton;
  p.budget = h.budget;
  p.collab_every = h.collab_every;  // max_context: the served one (RequestModel::max_context)
  p.max_tokens = r.max_tokens.value_or(0);
  p.kv_budget = h.kv_budget;
  p.kv_policy = kv_policy_name(h.kv_policy);
  p.kv_redundancy = h.kv_redundancy;
  p.sampling = g.sampling;
  if (auto it = r.template_kwargs.find("enable_thinking"); it != r.template_kwargs.end())
    p.enable_thinking = it->get<bool>();
  SessionRequest s;
  try {
    s = make_request(m, p);
  } catch (const RequestError& e) {
    throw bad_request(e.what(), request_param(e.field(), r.endpoint),
                      e.field() == RequestField::context ? "context_length_exceeded" : "");
  } catch (const Error& e) {  // the chat template cannot be used, or fails on the prompt
    throw bad_request(e.what(), "hogwild.format", "formatting_error");
  }
  check_worker_limit(h, lim);
  g.prompt = std::move(s.prompt);
  g.formatting = std::move(s.formatting);
  g.options = std::move(s.options);
}

}  // namespace

std::string request_param(RequestField field, Endpoint endpoint) {
  switch (field) {
    case RequestField::workers:
    case RequestField::budget:
    case RequestField::snapshot:
    case RequestField::collab_every:
    case RequestField::kv_budget:
    case RequestField::kv_chunk:
    case RequestField::kv_policy:
    case RequestField::kv_redundancy:
      return std::string("hogwild.") + field_range(field).name;
    case RequestField::problem:
    case RequestField::context:  // the problem is what the sentence asks to shorten
      return endpoint == Endpoint::chat ? "messages" : "prompt";
    default:  // max_tokens, seed, the sampling fields, stop: top-level keys of the same name
      return field_range(field).name;
  }
}

std::vector<GenerationRequest> build_generation(const CompletionRequest& r, const ServedModel& m,
                                                const RequestLimits& limits, uint64_t* seed_used,
                                                std::string* chat_prompt) {
  uint64_t seed = 0;
  if (r.seed && *r.seed >= 0) {  // -1 = a random seed, as on the CLI (core/request_fields.h)
    seed = static_cast<uint64_t>(*r.seed);
  } else {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 31) ^ rd();
  }
  if (seed_used) *seed_used = seed;
  GenerationRequest g;
  g.sampling = sampling_for(r, m.generation, seed);  // the options come from the builders below

  if (!r.hogwild) {
    // A plain completion: the one builder of engine/plain.h (one worker, formatting "plain",
    // to the end of the text), after the API's own checks.
    PlainRequest p;
    if (r.endpoint == Endpoint::chat) {
      const std::string text = render_chat(r, m);
      p.prompt = m.tokenizer->encode(text, false);
      if (chat_prompt) *chat_prompt = text;
    } else {
      p.prompt = m.tokenizer->encode(r.prompt, true);
    }
    if (p.prompt.empty())
      throw bad_request("the prompt is empty; give some text",
                        r.endpoint == Endpoint::chat ? "messages" : "prompt");
    const int64_t room = m.max_context - static_cast<int64_t>(p.prompt.size());
    check_context(p.prompt.size(), r.max_tokens.value_or(1), m, r);
    // Without max_tokens: up to generation_config.json's max_new_tokens when the model sets one
    // (as `hogwild generate`), else to the end of the context; the KV reservation follows
    // (docs/SERVER.md "Engine thread").
    int64_t cap = room;
    if (m.generation.max_new_tokens && *m.generation.max_new_tokens > 0)
      cap = std::min(room, *m.generation.max_new_tokens);
    p.max_tokens = r.max_tokens.value_or(cap);
    p.max_context = m.max_context;
    p.stop_ids = m.stop_ids;
    p.sampling = g.sampling;
    SessionRequest s = make_plain_request(m.config, std::move(p));
    g.prompt = std::move(s.prompt);
    g.formatting = std::move(s.formatting);
    g.options = std::move(s.options);
  } else {
    fill_hogwild(g, r, m, limits);
  }
  // Choice i draws with seed + stride * i, worker w with that + w: no two workers of a request
  // share a seed.
  const uint64_t stride = static_cast<uint64_t>(std::max(8, g.options.n_workers));
  std::vector<GenerationRequest> out;
  for (int i = 0; i < r.n; ++i) {
    out.push_back(g);
    out.back().sampling.seed = seed + stride * static_cast<uint64_t>(i);
  }
  return out;
}

std::vector<std::string> worker_names(const GenerationRequest& g) {
  return worker_labels(g.formatting, g.options.n_workers, g.options.layout == Layout::independent,
                       g.options.skeleton);
}

}  // namespace hogwild::server
