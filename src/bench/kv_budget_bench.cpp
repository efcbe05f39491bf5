// `hogwild bench --kv-budgets` (kv_budget_bench.h): the sessions, the picker and the timing.
#include "bench/kv_budget_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "core/error.h"
#include "core/request_fields.h"
#include "core/stop_reason.h"
#include "cpu/parallel.h"
#include "engine/model.h"
#include "engine/request.h"
#include "hogwild/batch.h"
#include "hogwild/forgetting.h"
#include "hogwild/session.h"
#include "hogwild/steps.h"
#ifdef HOGWILD_HAVE_CUDA
#include "bench/cuda_bench.h"
#endif

namespace hogwild::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Ids the picker may draw: plain printable ASCII tokens (no control bytes, so no line breaks),
// none of whose bytes is in `sep` (the step separator: no step can end early, not even across two
// tokens) or is a sentence end (. ! ?: a step is one sentence, closed by the picker) or opens a
// code or math block (` ~ $ \), no < > (special tokens' texts); and none the formatting forbids or
// that ends a sequence.
std::vector<int32_t> plain_tokens(const TextCodec& codec, const Formatting& fmt,
                                  const std::vector<int32_t>& stop_ids) {
  const std::string_view excluded = ".!?`~$\\<>";
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < codec.vocab_size(); ++id) {
    const std::string b = codec.token_bytes(id);
    const bool plain = !b.empty() && std::all_of(b.begin(), b.end(), [&](char c) {
      return c >= 0x20 && c <= 0x7e && excluded.find(c) == std::string_view::npos &&
             fmt.step_separator.find(c) == std::string::npos;
    });
    if (!plain || fmt.is_forbidden_text(b)) continue;
    if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) continue;
    ids.push_back(id);
  }
  if (ids.empty())
    fail("the model's vocabulary has no plain ASCII token the bench can write into a step");
  return ids;
}

// Draws each worker's tokens: step_every per step, the last of them `closing` (the tokens of
// "." + the step separator), the others from `plain` by a seeded generator (one stream per
// worker). The session's forbidden ids have -inf logits: one of them drawn is an error.
class KvBenchPicker : public TokenPicker {
 public:
  KvBenchPicker(std::vector<int32_t> plain, std::vector<int32_t> closing, int workers,
                int64_t step_every, uint64_t seed)
      : plain_(std::move(plain)),
        closing_(std::move(closing)),
        step_every_(step_every),
        count_(workers, 0),
        state_(workers) {
    for (int w = 0; w < workers; ++w) state_[w] = seed * 0x9e3779b97f4a7c15ull + 2 * w + 1;
  }

  int32_t pick(int w, std::vector<float>& logits) override {
    const int64_t pos = count_.at(w)++ % step_every_;
    const int64_t first_closing = step_every_ - static_cast<int64_t>(closing_.size());
    const int32_t t =
        pos >= first_closing ? closing_[pos - first_closing] : plain_[next(w) % plain_.size()];
    if (std::isinf(logits.at(t)) && logits[t] < 0)
      fail("the bench's picker drew id {}, which the session forbids", t);
    return t;
  }

 private:
  uint64_t next(int w) {  // splitmix64
    uint64_t z = (state_[w] += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  std::vector<int32_t> plain_, closing_;
  int64_t step_every_;
  std::vector<int64_t> count_;  // tokens picked per worker
  std::vector<uint64_t> state_;
};

// Counts the steps that ended (the picker's closings must end them, and nothing else).
class StepCounter : public SessionObserver {
 public:
  void on_step_end(int, int, const std::string&, const std::optional<std::string>&) override {
    ++ended;
  }
  int64_t ended = 0;
};

// The tokens that close a step, checked: a step of the picker's tokens ends at the last of them
// and not before (steps.h find_step_end), and every one of them may be drawn.
std::vector<int32_t> closing_tokens(const TextCodec& codec, const Formatting& fmt,
                                    const std::vector<int32_t>& plain, int64_t step_every) {
  const std::vector<int32_t> closing = codec.encode("." + fmt.step_separator);
  if (static_cast<int64_t>(closing.size()) > step_every)
    fail(
        "--step-every {}: the tokens that end a step ('.' and the step separator) are {} here; "
        "give at least {}",
        step_every, closing.size(), closing.size());
  std::string text = fmt.step_start(0, 1, false);
  for (int64_t i = 0; i + static_cast<int64_t>(closing.size()) < step_every; ++i)
    text += codec.token_bytes(plain[(i * 7919) % plain.size()]);
  for (size_t i = 0; i < closing.size(); ++i) {
    const std::string b = codec.token_bytes(closing[i]);
    text += b;
    if (fmt.is_forbidden_text(b) ||
        find_step_end(text, b.size(), fmt.step_separator).ended != (i + 1 == closing.size()))
      fail(
          "formatting '{}': the text '.' + its step separator does not end a step as the bench "
          "needs",
          fmt.name);
  }
  return closing;
}

// What one serial step measured.
struct StepSample {
  double step_s = 0, forward_s = 0, forget_s = 0;
  int64_t history = 0, read = 0;
};

// One row to run: its budget, kind and request (built before any row runs, so that a budget the
// request builder refuses fails at once).
struct RowPlan {
  int64_t budget = 0;
  std::string kind;
  SessionRequest req;
};

SessionRequest bench_request(const Model& model, const KvBudgetBenchOptions& opt, int64_t budget) {
  ProblemRequest pr;
  pr.problem = opt.problem;
  pr.workers = opt.workers;
  pr.layout = Layout::combined;
  pr.budget = opt.serial_steps;
  pr.kv_budget = budget;
  SessionRequest req = make_request(model, pr);
  SessionOptions& o = req.options;
  o.finisher = false;
  o.stop_on_answer = false;
  o.ignore_eos = true;
  o.collab_every = 0;
  o.device_sampling = false;  // the picker draws on the host
  return req;
}

// Runs the session of `row` to its end, one sample per serial step. The session's blocks are
// freed, also when the backend throws.
std::vector<StepSample> run_session(Model& model, RowPlan& row, KvBenchPicker& picker,
                                    const KvBudgetBenchOptions& opt, SessionResult& result,
                                    int64_t& steps_ended) {
  Backend& be = model.backend();
  Session s(be, model.codec(), row.req.formatting, row.req.options, picker);
  StepCounter counter;
  s.set_observer(&counter);
  std::vector<StepSample> samples;
  samples.reserve(opt.serial_steps);
  const int64_t report_every = std::max<int64_t>(1, opt.serial_steps / opt.windows);
  const std::string label = row.kind == "none"     ? std::string("no budget")
                            : row.kind == "scored" ? std::string("scored, nothing forgotten")
                                                   : fmt::format("budget {}", row.budget);
  try {
    s.start(row.req.prompt);
    SessionStep step;
    for (;;) {
      const auto t0 = Clock::now();
      if (!s.plan(step, INT64_MAX)) break;
      const bool decode = !s.prefilling();
      SessionStep* one = &step;
      run_forward(be, std::span<SessionStep*>(&one, 1));
      const double forget0 = s.result().forget_seconds;
      s.complete(step);
      if (!decode) continue;
      StepSample x{seconds_since(t0), step.forward_seconds, s.result().forget_seconds - forget0};
      x.history = static_cast<int64_t>(s.block_tokens(s.history_block()).size());
      x.read = kept_tokens(x.history, s.history_gaps());
      samples.push_back(x);
      if (opt.progress && s.serial_steps() % report_every == 0)
        std::fprintf(stderr, "kv bench %s: step %ld/%ld, forward %.2f ms, %ld tokens read\n",
                     label.c_str(), static_cast<long>(s.serial_steps()),
                     static_cast<long>(opt.serial_steps), x.forward_s * 1e3,
                     static_cast<long>(x.read));
    }
  } catch (...) {
    s.release();
    throw;
  }
  result = s.result();
  steps_ended = counter.ended;
  s.release();
  return samples;
}

// The windows of a row: opt.windows equal runs of serial steps (fewer when fewer steps ran).
nlohmann::json window_rows(const std::vector<StepSample>& x, int windows) {
  nlohmann::json out = nlohmann::json::array();
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t k = std::min<int64_t>(windows, n);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t from = i * n / k, to = (i + 1) * n / k;  // [from, to) 0-based
    std::vector<double> fwd;
    double fwd_sum = 0, step_sum = 0, forget_sum = 0;
    for (int64_t j = from; j < to; ++j) {
      fwd.push_back(x[j].forward_s * 1e3);
      fwd_sum += x[j].forward_s * 1e3;
      step_sum += x[j].step_s * 1e3;
      forget_sum += x[j].forget_s * 1e3;
    }
    const StepSample& last = x[to - 1];
    out.push_back({{"from", from + 1},
                   {"to", to},
                   {"forward_ms_median", median(fwd)},
                   {"forward_ms_mean", fwd_sum / (to - from)},
                   {"step_ms_mean", step_sum / (to - from)},
                   {"forget_ms", forget_sum},
                   {"history_tokens", last.history},
                   {"read_tokens", last.read},
                   {"forgotten_tokens", last.history - last.read}});
  }
  return out;
}

// The JSON row of one session (kv_budget_bench.h).
nlohmann::json row_json(const RowPlan& row, const std::vector<StepSample>& x,
                        const SessionResult& res, int64_t steps_ended,
                        const KvBudgetBenchOptions& opt) {
  double step_s = 0, forward_s = 0;
  std::vector<double> fwd;
  for (const StepSample& s : x) {
    step_s += s.step_s;
    forward_s += s.forward_s;
    fwd.push_back(s.forward_s * 1e3);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t history = x.empty() ? res.prompt_tokens : x.back().history;
  const int64_t read = x.empty() ? res.prompt_tokens : x.back().read;
  nlohmann::json r;
  r["kind"] = row.kind;
  r["kv_budget"] = row.budget;
  r["serial_steps"] = n;
  r["stop_reason"] = std::string(stop_reason_name(res.stop_reason));
  r["step_s"] = step_s;
  r["forward_s"] = forward_s;
  r["forget_s"] = res.forget_seconds;
  r["forget_share"] = step_s > 0 ? res.forget_seconds / step_s : 0.0;
  r["step_ms"] = n > 0 ? step_s * 1e3 / n : 0.0;
  r["forward_ms_median"] = median(fwd);
  r["forget_ms_per_step"] = n > 0 ? res.forget_seconds * 1e3 / n : 0.0;
  r["tok_s_per_worker"] = step_s > 0 ? n / step_s : 0.0;
  r["tok_s_aggregate"] = step_s > 0 ? opt.workers * n / step_s : 0.0;
  r["history_tokens"] = history;
  r["read_tokens"] = read;
  r["forgotten_tokens"] = history - read;
  r["forget_events"] = res.forgotten.size();
  r["steps_finished"] = steps_ended;
  r["windows"] = window_rows(x, opt.windows);
  return r;
}

// The rows to run, their requests built (and checked by make_request) before any runs.
std::vector<RowPlan> plan_rows(const Model& model, const KvBudgetBenchOptions& opt) {
  std::vector<RowPlan> rows;
  for (int64_t b : opt.budgets)
    rows.push_back({b, b == 0 ? "none" : "budget", bench_request(model, opt, b)});
  if (opt.scored_row)
    rows.push_back({kScoredBudget, "scored", bench_request(model, opt, kScoredBudget)});
  return rows;
}

// With a budget a step holds at most kv.step_tokens tokens (else the run ends as at the context
// limit): the longest opening the run can write plus step_every must fit.
void check_step_fits(const RowPlan& row, const TextCodec& codec, const KvBudgetBenchOptions& opt) {
  const SessionOptions& o = row.req.options;
  if (o.kv.budget == 0) return;
  const int last_step =
      static_cast<int>(std::min<int64_t>(opt.serial_steps / opt.step_every + 1, INT32_MAX));
  int64_t opening = 0;
  for (int w = 0; w < opt.workers; ++w)
    opening = std::max<int64_t>(
        opening, codec.encode(row.req.formatting.step_start(w, last_step, false)).size());
  if (opening + opt.step_every > o.kv.step_tokens)
    fail(
        "--step-every {}: with a KV budget a step holds at most {} tokens, its opening ({} "
        "tokens here) included; give at most {}",
        opt.step_every, o.kv.step_tokens, opening, o.kv.step_tokens - opening);
}

std::string model_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

nlohmann::json run_header(const Model& model, const KvBudgetBenchOptions& opt, const RowPlan& row) {
  const ModelConfig& c = model.config();
  nlohmann::json out;
  out["benchmark"] = "kv_budget";
  out["backend"] = model.device();
  out["device"] = fmt::format("CPU, {} threads", cpu::num_threads());
#ifdef HOGWILD_HAVE_CUDA
  if (model.device() == "cuda") out["device"] = cuda_device_name();
#endif
  out["model"] = model_name(opt.model_dir);
  out["model_dir"] = opt.model_dir;
  out["model_config"] = {{"layers", c.num_hidden_layers},  {"hidden_size", c.hidden_size},
                         {"heads", c.num_attention_heads}, {"kv_heads", c.num_key_value_heads},
                         {"head_dim", c.head_dim},         {"vocab_size", c.vocab_size}};
  out["formatting"] = row.req.formatting.name;
  out["workers"] = opt.workers;
  out["serial_steps"] = opt.serial_steps;
  out["step_every"] = opt.step_every;
  out["windows"] = opt.windows;
  out["prompt_tokens"] = row.req.prompt.size();
  out["seed"] = opt.seed;
  return out;
}

}  // namespace

void check_kv_budget_bench_options(const KvBudgetBenchOptions& o) {
  if (o.model_dir.empty())
    fail("--kv-budgets needs a model directory with its tokenizer: give -m DIR");
  check_field(RequestField::workers, o.workers);
  if (o.budgets.empty()) fail("--kv-budgets: give at least one budget (0 = no budget)");
  for (int64_t b : o.budgets)
    if (b < 0) fail("--kv-budgets {}: budgets are tokens >= 0 (0 = no budget)", b);
  if (o.serial_steps < 1) fail("--serial-steps {}: give at least 1 serial step", o.serial_steps);
  check_field(RequestField::budget, o.serial_steps);  // a session's range of serial steps
  if (o.step_every < 1)
    fail("--step-every {}: a step holds at least 1 generated token", o.step_every);
  if (o.windows < 1) fail("--windows {}: give at least 1 window", o.windows);
}

nlohmann::json run_kv_budget_bench(const KvBudgetBenchOptions& opt) {
  check_kv_budget_bench_options(opt);
  ModelOptions mo;
  mo.model_dir = opt.model_dir;
  mo.device = opt.device;
  mo.kv_tokens = opt.kv_tokens;
  std::unique_ptr<Model> model = Model::load(mo);
  std::vector<RowPlan> rows = plan_rows(*model, opt);
  const TextCodec& codec = model->codec();
  const Formatting& fmt = rows.front().req.formatting;
  const std::vector<int32_t> plain = plain_tokens(codec, fmt, model->stop_ids());
  const std::vector<int32_t> closing = closing_tokens(codec, fmt, plain, opt.step_every);
  for (const RowPlan& row : rows) check_step_fits(row, codec, opt);

  nlohmann::json out = run_header(*model, opt, rows.front());
  out["results"] = nlohmann::json::array();
  for (RowPlan& row : rows) {
    KvBenchPicker picker(plain, closing, opt.workers, opt.step_every, opt.seed);
    SessionResult res;
    int64_t ended = 0;
    const std::vector<StepSample> x = run_session(*model, row, picker, opt, res, ended);
    // The step structure the results rely on: every closing ended a step, nothing else did.
    const int64_t expected = opt.workers * (static_cast<int64_t>(x.size()) / opt.step_every);
    if (ended != expected)
      fail("kv bench: {} steps ended in {} serial steps, where the picker closed {}", ended,
           x.size(), expected);
    out["results"].push_back(row_json(row, x, res, ended, opt));
  }
  return out;
}

}  // namespace hogwild::bench
