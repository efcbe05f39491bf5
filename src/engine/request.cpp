#include "engine/request.h"

#include "core/error.h"
#include "hogwild/prompt.h"
#include "hogwild/request_check.h"

namespace hogwild {

Formatting request_formatting(const Model& model, const std::string& name) {
  const chat::ChatTemplate* tmpl = model.chat_template();
  return resolve_formatting(
      !name.empty()
          ? name
          : model_formatting_ref(model.dir(), tmpl ? tmpl->source() : "", AnswerKind::boxed));
}

SessionRequest make_request(const Model& model, const ProblemRequest& p) {
  SessionRequest r;
  r.formatting = request_formatting(model, p.formatting);
  const Formatting& fmt = r.formatting;
  if (p.problem.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("no problem given; pass the problem text");
  // Independent workers (and Skeleton-of-Thought's) write under the first name.
  const bool independent = p.layout == Layout::independent || p.skeleton;
  // Every range and rule in one place (hogwild/request_check.h).
  check_workers(p.workers, p.skeleton ? Layout::independent : p.layout, p.skeleton, fmt);
  check_field(RequestField::budget, p.budget);
  check_snapshots(p.snapshots, p.budget);
  check_field(RequestField::collab_every, p.collab_every);
  check_max_context(p.max_context, model.config().max_position_embeddings);
  check_sampling(p.sampling);
  check_kv_budget(p.kv_budget, p.skeleton ? Layout::independent : p.layout, p.skeleton);
  if (fmt.chat.use_template && !model.chat_template() && !model.chat_template_error().empty())
    fail("the model's chat template cannot be used: {}", model.chat_template_error());
  const std::string text = build_prompt(fmt, model.chat_template(), p.problem,
                                        independent ? 1 : p.workers, p.skeleton ? p.workers : 0);
  r.prompt = model.tokenizer().encode(text, !fmt.chat.use_template);
  r.options.kv.budget = p.kv_budget;
  check_kv_chunk(p.kv_chunk, p.kv_budget);
  r.options.kv.policy = check_kv_policy(p.kv_policy, p.kv_budget, p.kv_chunk);
  if (p.kv_chunk > 0) r.options.kv.chunk = p.kv_chunk;
  check_kv_fits(r.options.kv, static_cast<int64_t>(r.prompt.size()), p.workers, fmt,
                [&](const std::string& t) {
                  return static_cast<int64_t>(model.tokenizer().encode(t).size());
                });
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
  return r;
}

}  // namespace hogwild
