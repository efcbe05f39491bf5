#include "engine/request.h"

#include "core/error.h"
#include "hogwild/prompt.h"
#include "hogwild/request_check.h"

namespace hogwild {

RequestModel request_model(const Model& model) {
  RequestModel m;
  m.tokenizer = &model.tokenizer();
  m.chat_template = model.chat_template();
  m.chat_template_error = model.chat_template_error();
  m.max_context = model.config().max_position_embeddings;
  m.stop_ids = model.stop_ids();
  m.dir = model.dir();
  return m;
}

Formatting request_formatting(const RequestModel& model, const std::string& name) {
  if (!name.empty()) return resolve_formatting(name);
  if (model.default_formatting) return *model.default_formatting;
  const chat::ChatTemplate* tmpl = model.chat_template;
  return resolve_formatting(
      model_formatting_ref(model.dir, tmpl ? tmpl->source() : "", AnswerKind::boxed));
}

SessionRequest make_request(const RequestModel& model, const ProblemRequest& p) {
  HOGWILD_CHECK(model.tokenizer != nullptr);
  SessionRequest r;
  r.formatting = request_formatting(model, p.formatting);
  Formatting& fmt = r.formatting;
  if (p.enable_thinking) {
    fmt.chat.has_enable_thinking = true;
    fmt.chat.enable_thinking = *p.enable_thinking;
  }
  // Every range and rule in one place (hogwild/request_check.h). Skeleton-of-Thought runs on the
  // independent layout, whose workers write under the first name.
  const Layout layout = p.skeleton ? Layout::independent : p.layout;
  check_problem(p.problem);
  check_workers(p.workers, layout, p.skeleton, fmt);
  check_field(RequestField::budget, p.budget);
  check_snapshots(p.snapshots, p.budget);
  check_field(RequestField::collab_every, p.collab_every);
  check_max_context(p.max_context, model.max_context);
  check_field(RequestField::max_tokens, p.max_tokens);
  check_sampling(p.sampling);
  check_kv_budget(p.kv_budget, layout, p.skeleton);
  check_kv_chunk(p.kv_chunk, p.kv_budget);
  r.options.kv.budget = p.kv_budget;
  r.options.kv.policy = check_kv_policy(p.kv_policy, p.kv_budget, p.kv_chunk);
  if (p.kv_chunk > 0) r.options.kv.chunk = p.kv_chunk;
  r.options.kv.redundancy_weight =
      check_kv_redundancy(p.kv_redundancy, p.kv_budget, r.options.kv.policy);
  if (fmt.chat.use_template && !model.chat_template && !model.chat_template_error.empty())
    fail("the model's chat template cannot be used: {}", model.chat_template_error);
  const Tokenizer& tok = *model.tokenizer;
  const std::string text =
      build_prompt(fmt, model.chat_template, p.problem,
                   layout == Layout::independent ? 1 : p.workers, p.skeleton ? p.workers : 0);
  r.prompt = tok.encode(text, !fmt.chat.use_template);
  check_kv_fits(r.options.kv, static_cast<int64_t>(r.prompt.size()), p.workers, fmt,
                [&](const std::string& t) { return static_cast<int64_t>(tok.encode(t).size()); });
  const int64_t first_step = first_step_tokens(
      fmt, layout, p.workers, p.skeleton,
      [&](const std::string& t) { return static_cast<int64_t>(tok.encode(t, false).size()); });
  check_first_step_fits(static_cast<int64_t>(r.prompt.size()), first_step, p.max_context,
                        model.max_context, p.workers, layout);
  r.options.n_workers = p.workers;
  r.options.layout = layout;
  r.options.skeleton = p.skeleton;
  r.options.budget = p.budget;
  r.options.snapshots = p.snapshots;
  r.options.collab_every = p.collab_every;
  r.options.max_context = p.max_context > 0 ? p.max_context : model.max_context;
  r.options.max_tokens_per_worker = p.max_tokens;
  r.options.extra_eos = model.stop_ids;
  r.options.device_sampling = true;
  r.sampling = p.sampling;
  return r;
}

SessionRequest make_request(const Model& model, const ProblemRequest& p) {
  return make_request(request_model(model), p);
}

}  // namespace hogwild
