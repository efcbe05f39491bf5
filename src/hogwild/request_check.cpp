#include "hogwild/request_check.h"

#include <algorithm>
#include <optional>

#include "hogwild/session.h"

namespace hogwild {

void check_problem(std::string_view problem) {
  if (problem.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw RequestError(RequestField::problem,
                       "no problem given; the problem text is empty: give the problem to solve");
}

int max_workers(Layout layout, bool skeleton, const Formatting& fmt) {
  if (layout == Layout::independent || skeleton) return kMaxIndependentWorkers;
  return static_cast<int>(fmt.worker_names.size());
}

void check_workers(int workers, Layout layout, bool skeleton, const Formatting& fmt) {
  if (skeleton && layout != Layout::independent)
    throw RequestError(RequestField::workers,
                       fmt::format("Skeleton-of-Thought runs on the independent layout, not {}; "
                                   "drop the layout",
                                   layout_name(layout)));
  if (layout == Layout::independent || skeleton) {
    check_field(RequestField::workers, workers);
    return;
  }
  const int n = max_workers(layout, skeleton, fmt);
  if (workers < 1 || workers > n)
    throw RequestError(
        RequestField::workers,
        fmt::format("workers is {}; the formatting '{}' names {} workers: give 1..{}, add names to "
                    "\"worker_names\" in a formatting file, or use the independent layout "
                    "(1..{} workers that do not see each other)",
                    workers, fmt.name, n, n, kMaxIndependentWorkers));
}

void check_snapshots(const std::vector<int64_t>& snapshots, int64_t budget) {
  for (int64_t s : snapshots) {
    check_field(RequestField::snapshot, s);
    if (budget > 0 && s > budget)
      throw RequestError(RequestField::snapshot,
                         fmt::format("snapshot is {}, beyond the budget of {} serial steps where "
                                     "the run ends; give snapshots in 1..{} or raise the budget",
                                     s, budget, budget));
  }
}

void check_max_context(int64_t max_context, int64_t model_context) {
  check_field(RequestField::max_context, max_context);
  if (model_context > 0 && max_context > model_context)
    throw RequestError(RequestField::max_context,
                       fmt::format("max_context is {}, beyond the model's context of {} tokens "
                                   "(max_position_embeddings in config.json): positions past it "
                                   "are untrained; give 0..{}",
                                   max_context, model_context, model_context));
}

int64_t first_step_tokens(const Formatting& f, Layout layout, int n, bool skeleton,
                          const std::function<int64_t(const std::string&)>& count_tokens) {
  auto count = [&count_tokens](const std::string& text) {
    return text.empty() ? int64_t{0} : count_tokens(text);
  };
  std::vector<int64_t> opening(n);
  // Independent workers (samples, Skeleton-of-Thought) write under the first name.
  for (int w = 0; w < n; ++w)
    opening[w] = count(f.step_start(layout == Layout::independent ? 0 : w, 1, false));
  const bool others = n > 1 && (layout == Layout::combined || layout == Layout::contiguous);
  int64_t longest = 0;
  for (int w = 0; w < n; ++w) {
    int64_t len = opening[w];
    if (others) {
      len += count(f.others_header(w)) + count(f.layout.other_separator + f.own_header(w));
      for (int o = 0; o < n; ++o)
        if (o != w) len += opening[o];
      len += static_cast<int64_t>(n - 2) * count(f.layout.other_separator);  // between the others
    }
    longest = std::max(longest, len);
  }
  if (skeleton && n > 0) longest = std::max(longest, opening[0] + count(f.sot.outline_prefix));
  return longest;
}

void check_first_step_fits(int64_t prompt_tokens, int64_t first_step, int64_t max_context,
                           int64_t model_context, int n_workers, Layout layout) {
  const int64_t limit = max_context > 0 ? max_context : model_context;
  const int64_t total = prompt_tokens + first_step + 1;
  if (limit <= 0 || total <= limit) return;
  const std::string context =
      max_context > 0 && model_context > 0 && max_context < model_context
          ? fmt::format("The context limit (max_context) is {} tokens, below the model's {}",
                        max_context, model_context)
          : fmt::format("This model's maximum context length is {} tokens", limit);
  const bool others = n_workers > 1 && (layout == Layout::combined || layout == Layout::contiguous);
  throw RequestError(
      RequestField::context,
      fmt::format("{}. However, you requested {} tokens ({} in the problem with the formatting's "
                  "prompt, {} in the layout's texts and the workers' first step openings, 1 in "
                  "the completion). Please shorten the problem{}.",
                  context, total, prompt_tokens, first_step,
                  others ? ", or use fewer workers or the interleaved layout" : ""));
}

void check_session_options(const SessionOptions& o, const Formatting& fmt, int64_t model_context) {
  check_workers(o.n_workers, o.layout, o.skeleton, fmt);
  check_field(RequestField::budget, o.budget);
  for (int64_t s : o.snapshots) check_field(RequestField::snapshot, s);
  check_field(RequestField::collab_every, o.collab_every);
  check_max_context(o.max_context, model_context);
  check_field(RequestField::max_tokens, o.max_tokens_per_worker);
  check_kv_budget(o.kv.budget, o.layout, o.skeleton);
  if (o.kv.chunk < 1 || o.kv.recent < 0 || o.kv.window < 1)
    throw RequestError(RequestField::kv_chunk,
                       fmt::format("kv budget: chunk {} (>= 1), recent {} (>= 0) and window {} "
                                   "(>= 1) are out of range",
                                   o.kv.chunk, o.kv.recent, o.kv.window));
  check_kv_redundancy(o.kv.redundancy_weight, o.kv.budget, o.kv.policy);
}

void check_kv_chunk(int64_t kv_chunk, int64_t kv_budget) {
  check_field(RequestField::kv_chunk, kv_chunk);
  if (kv_chunk > 0 && kv_budget == 0)
    throw RequestError(RequestField::kv_chunk,
                       fmt::format("kv_chunk is {}, but there is no kv_budget: chunks are what a "
                                   "budget forgets; give a kv_budget, or drop kv_chunk",
                                   kv_chunk));
}

void check_kv_budget(int64_t kv_budget, Layout layout, bool skeleton) {
  check_field(RequestField::kv_budget, kv_budget);
  if (kv_budget > 0 && (skeleton || (layout != Layout::combined && layout != Layout::interleaved)))
    throw RequestError(
        RequestField::kv_budget,
        fmt::format("kv_budget is {}, but the {} layout{} never moves steps into the shared "
                    "history, so there is nothing to forget; use the combined or interleaved "
                    "layout, or kv_budget 0",
                    kv_budget, layout_name(layout), skeleton ? " with Skeleton-of-Thought" : ""));
}

KvPolicy check_kv_policy(std::string_view kv_policy, int64_t kv_budget, int64_t kv_chunk) {
  if (kv_policy.empty()) return KvPolicy::evict;
  const std::optional<KvPolicy> p = parse_kv_policy(kv_policy);
  if (!p)
    throw RequestError(RequestField::kv_policy,
                       fmt::format("kv_policy is '{}'; use evict (forget the least attended "
                                   "chunks of the history) or summarise (a worker writes a "
                                   "summary step and the steps it sums up are forgotten)",
                                   kv_policy));
  if (*p == KvPolicy::summarise && kv_budget == 0)
    throw RequestError(RequestField::kv_policy,
                       "kv_policy is summarise, but there is no kv_budget: the policy says what "
                       "happens at the budget; give a kv_budget, or drop kv_policy");
  if (*p == KvPolicy::summarise && kv_chunk > 0)
    throw RequestError(RequestField::kv_chunk,
                       fmt::format("kv_chunk is {}, but kv_policy summarise drops whole steps, not "
                                   "chunks; drop kv_chunk, or use kv_policy evict",
                                   kv_chunk));
  return *p;
}

double check_kv_redundancy(double kv_redundancy, int64_t kv_budget, KvPolicy policy) {
  check_real_field(RequestField::kv_redundancy, kv_redundancy);
  if (kv_redundancy > 0 && kv_budget == 0)
    throw RequestError(RequestField::kv_redundancy,
                       fmt::format("kv_redundancy is {}, but there is no kv_budget: redundancy "
                                   "ranks what a budget forgets; give a kv_budget, or drop "
                                   "kv_redundancy",
                                   kv_redundancy));
  if (kv_redundancy > 0 && policy == KvPolicy::summarise)
    throw RequestError(RequestField::kv_redundancy,
                       fmt::format("kv_redundancy is {}, but kv_policy summarise forgets what a "
                                   "summary sums up, not the least useful chunks; drop "
                                   "kv_redundancy, or use kv_policy evict",
                                   kv_redundancy));
  return kv_redundancy;
}

void check_kv_summary_fits(int64_t kv_budget, int64_t prompt_tokens, int n_workers,
                           int64_t summary_tokens, int64_t summary_step) {
  const int64_t need = prompt_tokens + summary_step + n_workers * summary_tokens;
  if (kv_budget > 0 && kv_budget < need)
    throw RequestError(
        RequestField::kv_budget,
        fmt::format("kv_budget is {}, but with kv_policy summarise the history holds the prompt "
                    "({} tokens) and a summary step of up to {} tokens, and a summary starts {} x "
                    "{} tokens before the budget ({} workers write while it is written); give at "
                    "least {} tokens, a shorter summary.max_tokens in the formatting, or 0 for no "
                    "budget",
                    kv_budget, prompt_tokens, summary_step, n_workers, summary_tokens, n_workers,
                    need));
}

int64_t summary_step_tokens(const Formatting& fmt, int n_workers,
                            const std::function<int64_t(const std::string&)>& count_tokens) {
  int64_t opening = 0;
  for (int w = 0; w < n_workers; ++w)
    opening = std::max(opening, count_tokens(fmt.summary_start(w, 1000)));
  return opening + fmt.summary.max_tokens + count_tokens(fmt.step_separator);
}

void check_kv_fits(const ForgetPolicy& kv, int64_t prompt_tokens, int n_workers,
                   const Formatting& fmt,
                   const std::function<int64_t(const std::string&)>& count_tokens) {
  if (kv.policy == KvPolicy::summarise && kv.budget > 0)
    check_kv_summary_fits(kv.budget, prompt_tokens, n_workers, fmt.summary.max_tokens,
                          summary_step_tokens(fmt, n_workers, count_tokens));
  else
    check_kv_budget_fits(kv.budget, prompt_tokens, kv.recent);
}

void check_kv_budget_fits(int64_t kv_budget, int64_t prompt_tokens, int64_t recent) {
  if (kv_budget > 0 && kv_budget < prompt_tokens + recent)
    throw RequestError(
        RequestField::kv_budget,
        fmt::format("kv_budget is {}, but the prompt ({} tokens) and the history's last {} tokens "
                    "are never forgotten; give at least {} tokens, or 0 for no budget",
                    kv_budget, prompt_tokens, recent, prompt_tokens + recent));
}

}  // namespace hogwild
