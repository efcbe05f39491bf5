#include "engine/request.h"

#include "core/error.h"
#include "hogwild/prompt.h"

namespace hogwild {

Formatting request_formatting(const Model& model, const std::string& name) {
  const chat::ChatTemplate* tmpl = model.chat_template();
  return resolve_formatting(
      !name.empty() ? name
                    : default_formatting_name(tmpl ? tmpl->source() : "", AnswerKind::boxed));
}

SessionRequest make_request(const Model& model, const ProblemRequest& p) {
  SessionRequest r;
  r.formatting = request_formatting(model, p.formatting);
  const Formatting& fmt = r.formatting;
  if (p.problem.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("no problem given; pass the problem text");
  // Independent workers (and Skeleton-of-Thought's) write under the first name.
  const bool independent = p.layout == Layout::independent || p.skeleton;
  if (independent && (p.workers < 1 || p.workers > kMaxIndependentWorkers))
    fail("{} workers: the independent layout runs 1..{}", p.workers, kMaxIndependentWorkers);
  if (!independent && (p.workers < 1 || p.workers > static_cast<int>(fmt.worker_names.size())))
    fail("{} workers: the formatting '{}' names {} workers; use 1..{}", p.workers, fmt.name,
         fmt.worker_names.size(), fmt.worker_names.size());
  if (p.budget < 0) fail("budget must be >= 0 serial steps (0 = until an answer)");
  if (p.collab_every < -1) fail("collab_every must be >= 0 tokens (0 = off)");
  if (p.max_context < 0) fail("max_context must be >= 0 tokens (0 = the model's context length)");
  const int64_t model_ctx = model.config().max_position_embeddings;
  if (model_ctx > 0 && p.max_context > model_ctx)
    fail(
        "max context {} is beyond the model's context of {} tokens (max_position_embeddings in "
        "config.json); positions past it are untrained; give at most {}",
        p.max_context, model_ctx, model_ctx);
  if (fmt.chat.use_template && !model.chat_template() && !model.chat_template_error().empty())
    fail("the model's chat template cannot be used: {}", model.chat_template_error());
  const std::string text = build_prompt(fmt, model.chat_template(), p.problem,
                                        independent ? 1 : p.workers, p.skeleton ? p.workers : 0);
  r.prompt = model.tokenizer().encode(text, !fmt.chat.use_template);
  r.options.n_workers = p.workers;
  r.options.layout = p.skeleton ? Layout::independent : p.layout;
  r.options.skeleton = p.skeleton;
  r.options.budget = p.budget;
  r.options.snapshots = p.snapshots;
  r.options.collab_every = p.collab_every;
  r.options.max_context = p.max_context;
  r.options.extra_eos = model.stop_ids();
  r.options.device_sampling = true;
  r.sampling = p.sampling;
  Sampler check(r.sampling);  // throws for bad parameters
  (void)check;
  return r;
}

}  // namespace hogwild
