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

/// A problem as the user states it.
struct ProblemRequest {
  std::string problem;     // the problem text (UTF-8)
  std::string formatting;  // built-in name or JSON file; "" = model_formatting_ref (math)
  int workers = 2;
  Layout layout = Layout::combined;
  int64_t budget = 0;              // serial steps; 0 = until an answer
  std::vector<int64_t> snapshots;  // serial steps at which the finisher runs
  int64_t collab_every = -1;       // tokens between collaboration checks; -1 = formatting's
  int64_t max_context = 0;         // tokens in a view; 0 = the model's
  // Tokens of the shared history still read (SessionOptions::kv, hogwild/forgetting.h); 0 = no
  // budget. Needs a backend that can forget (Backend::can_forget: CPU and CUDA).
  int64_t kv_budget = 0;
  int64_t kv_chunk = 0;     // tokens forgotten together (ForgetPolicy::chunk); 0 = its default
  std::string kv_policy;    // evict or summarise (ForgetPolicy::policy); "" = evict
  SamplingParams sampling;  // from generation_config.json + the user's flags
  // Skeleton-of-Thought (hogwild/session.h): workers = the most outline points (1..64); the
  // layout is independent and the prompt the formatting's "sot" one.
  bool skeleton = false;
};

/// The formatting a problem request resolves to: its name or file, else the model directory's
/// hogwild_format.json, else the model family's default from the chat template
/// (model_formatting_ref). Throws hogwild::Error for an unknown name or a bad formatting file.
Formatting request_formatting(const Model& model, const std::string& name);

/// Builds the SessionRequest `hogwild run` runs: the formatting's prompt through the chat template,
/// tokenized; stop ids from Model::stop_ids; device-contract sampling on. The independent layout's
/// workers (1..kMaxIndependentWorkers) get the single-worker prompt; Skeleton-of-Thought its own.
/// Throws RequestError for a field out of its range (hogwild/request_check.h: workers for the
/// layout and formatting, budget, snapshots beyond the budget, collab_every, a context beyond the
/// model's, sampling, a kv_budget out of range, on a layout without a growing history or below
/// the prompt plus the recent tokens kept (summarise: plus the summaries' room), a kv_policy
/// other than evict or summarise), hogwild::Error for an empty problem or a chat template
/// that cannot be used (with its error).
SessionRequest make_request(const Model& model, const ProblemRequest& problem);

}  // namespace hogwild
