// From a problem (or a plain prompt) to a session the Engine can run: formatting, prompt text
// through the model's chat template, token ids, session options, sampling.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model.h"
#include "hogwild/formatting.h"
#include "hogwild/session.h"
#include "sampling/sampler.h"

namespace hogwild {

/// Everything a session needs that the Engine does not already hold (the model, the codec). The
/// Engine owns it while the session runs.
struct SessionRequest {
  std::vector<int32_t> prompt;  // token ids, chat template applied
  Formatting formatting;
  SessionOptions options;   // workers, layout, budget, snapshots, stop ids, ...
  SamplingParams sampling;  // seed = base seed; worker w uses seed + w (SamplerPicker)
  // How workers choose tokens; null = a SamplerPicker over `sampling` (set by Engine::submit).
  std::unique_ptr<TokenPicker> picker;
  SessionObserver* observer = nullptr;  // not owned; must outlive the session in the engine
};

/// A problem as the user states it: what `hogwild run`, `eval`, `bench` and the HTTP server's
/// hogwild requests (server/prompting.h, which maps the JSON fields onto these) all give.
struct ProblemRequest {
  std::string problem;     // the problem text (UTF-8)
  std::string formatting;  // built-in name or JSON file; "" = the model's (RequestModel)
  int workers = 2;
  Layout layout = Layout::combined;
  int64_t budget = 0;              // serial steps; 0 = until an answer
  std::vector<int64_t> snapshots;  // serial steps at which the finisher runs
  int64_t collab_every = -1;       // tokens between collaboration checks; -1 = formatting's
  int64_t max_context = 0;         // tokens in a view; 0 = the model's
  int64_t max_tokens = 0;          // generated tokens per worker; 0 = no limit
  // Tokens of the shared history still read (SessionOptions::kv, hogwild/forgetting.h); 0 = no
  // budget. Needs a backend that can forget (Backend::can_forget: CPU and CUDA).
  int64_t kv_budget = 0;
  int64_t kv_chunk = 0;   // tokens forgotten together (ForgetPolicy::chunk); 0 = its default
  std::string kv_policy;  // evict or summarise (ForgetPolicy::policy); "" = evict
  // R-KV's redundancy weight of evict, 1 - lambda in [0, 1] (ForgetPolicy::redundancy_weight);
  // 0 = off. Needs a backend that measures key redundancy (Backend::measures_redundancy: CPU,
  // CUDA).
  double kv_redundancy = 0.0;
  SamplingParams sampling;  // from generation_config.json + the user's flags
  // Skeleton-of-Thought (hogwild/session.h): workers = the most outline points (1..64); the
  // layout is independent and the prompt the formatting's "sot" one.
  bool skeleton = false;
  // The chat template's enable_thinking (Qwen3), over the formatting's chat.enable_thinking;
  // unset = the formatting's (the server's chat_template_kwargs.enable_thinking).
  std::optional<bool> enable_thinking;
};

/// What building a session request reads of a model: its tokenizer, chat template, context, stop
/// ids and the formatting of a request that names none. request_model() gives a Model's; the
/// HTTP server's ServedModel is one (server/prompting.h), so both build through make_request.
struct RequestModel {
  const Tokenizer* tokenizer = nullptr;               // not owned; must outlive the calls
  const chat::ChatTemplate* chat_template = nullptr;  // not owned; null when the model has none
  std::string chat_template_error;  // why chat_template is null: "" = none, else its parse error
  // Tokens a view may hold as the model is offered: config.json max_position_embeddings
  // (request_model), or the server's --max-context. A request's own max_context stays within it;
  // 0 = unknown.
  int64_t max_context = 0;
  std::vector<int32_t> stop_ids;  // Model::stop_ids
  // The formatting of a request without one: default_formatting when set (the server resolves
  // its --format at load), else model_formatting_ref(dir, the chat template): the directory's
  // hogwild_format.json, else the model family's math formatting, resolved when a request needs it.
  std::string dir;
  std::optional<Formatting> default_formatting;
};

/// The RequestModel of a loaded model (default_formatting unset: model_formatting_ref of its
/// directory). Throws hogwild::Error when the model has no tokenizer (Model::tokenizer).
RequestModel request_model(const Model& model);

/// The formatting a problem request resolves to: its name or file, else the model's default
/// (RequestModel::default_formatting, else the model directory's hogwild_format.json, else the
/// model family's default from the chat template: model_formatting_ref). Throws hogwild::Error
/// for an unknown name or a bad formatting file.
Formatting request_formatting(const RequestModel& model, const std::string& name);

/// The one builder of a hogwild session request, for every way in: `hogwild run`, `eval`, `bench`
/// and the HTTP server's hogwild requests. The formatting's prompt through the chat template
/// (enable_thinking as the request says), tokenized; stop ids from the model; device-contract
/// sampling on. The independent layout's workers (1..kMaxIndependentWorkers) get the
/// single-worker prompt; Skeleton-of-Thought its own. Throws RequestError for a field out of its
/// range (hogwild/request_check.h: an empty problem, workers for the layout and formatting,
/// budget, snapshots beyond the budget, collab_every, a context beyond the model's, max_tokens,
/// sampling, a kv_budget out of range, on a layout without a growing history or below the prompt
/// plus the recent tokens kept (summarise: plus the summaries' room), a kv_chunk without a
/// kv_budget, a kv_policy other than evict or summarise, a kv_redundancy outside [0, 1] or without
/// a kv_budget or with summarise, a prompt that leaves no room in the context for the first
/// serial step: check_first_step_fits), hogwild::Error for a formatting that
/// does not resolve, a chat template that cannot be used (with its error) or that fails to render.
SessionRequest make_request(const RequestModel& model, const ProblemRequest& problem);

/// make_request on request_model(model).
SessionRequest make_request(const Model& model, const ProblemRequest& problem);

}  // namespace hogwild
