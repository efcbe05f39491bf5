// Session: start, the prompt's prefill, the dispatch of plan / complete by phase, the end of the
// run (see session.h; the serial steps in session_decode.cpp).
#include "hogwild/session.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "hogwild/batch.h"
#include "hogwild/kv_budget.h"
#include "hogwild/method.h"
#include "hogwild/request_check.h"
#include "sampling/stop_policy.h"

namespace hogwild {

Session::Session(Backend& backend, const TextCodec& codec, const Formatting& formatting,
                 SessionOptions options, TokenPicker& picker)
    : be_(backend), codec_(codec), fmt_(formatting), opt_(std::move(options)), picker_(picker) {
  // Ranges and the workers' rule: hogwild/request_check.h. The view is checked against the
  // model's context by the request builders, which know the user's words for it.
  check_session_options(opt_, fmt_, 0);
  // Independent workers write under worker 0's name.
  fmt_.check_workers(opt_.layout == Layout::independent ? 1 : opt_.n_workers);
  std::sort(opt_.snapshots.begin(), opt_.snapshots.end());
  opt_.snapshots.erase(std::unique(opt_.snapshots.begin(), opt_.snapshots.end()),
                       opt_.snapshots.end());
  collab_every_ = opt_.collab_every >= 0 ? opt_.collab_every : fmt_.collab_check.every;
  method_ = SessionMethod::make(opt_);
  if (!method_->collaborates()) collab_every_ = 0;  // no collaboration to check
  max_context_ = opt_.max_context > 0 ? opt_.max_context : be_.config().max_position_embeddings;
  if (fmt_.finisher.suffix.empty())
    fail("formatting '{}': finisher.suffix is empty; the finisher needs text to continue from",
         fmt_.name);
  const ModelConfig& cfg = be_.config();
  if (!opt_.finisher && !opt_.snapshots.empty())
    fail("snapshots run the finisher; a session without the finisher takes none");
  if (!opt_.ignore_eos)
    eos_ = eos_id_union(codec_.eos_ids(), cfg.eos_token_id,
                        std::vector<int64_t>(opt_.extra_eos.begin(), opt_.extra_eos.end()));
  build_forbidden();
  if (opt_.kv.budget > 0 && !be_.can_forget())
    fail(
        "a KV budget ({} tokens) needs a backend that can forget cache tokens, and this one "
        "cannot: run on the CPU or CUDA backend, or without --kv-budget",
        opt_.kv.budget);
  if (opt_.kv.budget > 0 && opt_.kv.redundancy_weight > 0 && !be_.measures_redundancy())
    fail(
        "--kv-redundancy {} needs a backend that measures key redundancy, and this one cannot: "
        "run on the CPU or CUDA backend, or with --kv-redundancy 0",
        opt_.kv.redundancy_weight);
  scores_ = ScoreWindow(opt_.kv.window);
}

Session::~Session() = default;

std::string Session::raise_context_hint() const {
  const int64_t model = be_.config().max_position_embeddings;
  return max_context_ < model ? fmt::format(" or raise --max-context (up to the model's {})", model)
                              : std::string();
}

bool Session::is_eos(int32_t token) const {
  return std::find(eos_.begin(), eos_.end(), token) != eos_.end();
}

void Session::build_forbidden() {
  const int64_t vocab = be_.config().vocab_size;
  forbidden_.assign(vocab, 0);
  if (fmt_.forbidden.eos)
    for (int32_t e : eos_)
      if (e >= 0 && e < vocab) forbidden_[e] = 1;
  if (!fmt_.forbidden.texts.empty()) {
    const int64_t n = std::min<int64_t>(vocab, codec_.vocab_size());
    for (int64_t id = 0; id < n; ++id)
      if (fmt_.is_forbidden_text(codec_.token_bytes(static_cast<int32_t>(id)))) forbidden_[id] = 1;
  }
  if (std::all_of(forbidden_.begin(), forbidden_.end(), [](uint8_t f) { return f != 0; }))
    fail("formatting '{}' forbids every token of the vocabulary; check forbidden.texts", fmt_.name);
  forbidden_ids_.clear();
  for (int64_t id = 0; id < vocab; ++id)
    if (forbidden_[id]) forbidden_ids_.push_back(static_cast<int32_t>(id));
}

const std::vector<int32_t>& Session::block_tokens(BlockId b) const {
  HOGWILD_CHECK(b >= 0 && static_cast<size_t>(b) < block_tokens_.size());
  return block_tokens_[b];
}

// A block for constant text `text` (one block per distinct text); -1 for "".
BlockId Session::const_block(const std::string& text) {
  if (text.empty()) return -1;
  for (auto& [t, b] : const_texts_)
    if (t == text) return b;
  BlockId b = new_block();
  const_texts_.emplace_back(text, b);
  return b;
}

BlockId Session::new_block() {
  BlockId b = be_.new_block();
  owned_.push_back(b);
  if (static_cast<size_t>(b) >= block_tokens_.size()) block_tokens_.resize(b + 1);
  block_tokens_[b].clear();
  return b;
}

void Session::add_note(const std::string& author, const std::string& text) {
  if (phase_ == Phase::done) fail("the session has finished; a note can no longer reach it");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("the note is empty; give the text the workers should read");
  notes_.emplace_back(author.empty() ? std::string("a person") : author, text);
}

void Session::release() {
  for (BlockId b : owned_) be_.free_block(b);
  owned_.clear();
}

void Session::cancel(StopReason reason) {
  if (phase_ == Phase::done) return;
  finishers_.clear();
  result_.stop_reason = reason;
  result_.serial_steps = serial_;
  if (phase_ == Phase::decode)  // the decode time so far, as end_decoding counts it
    result_.decode_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start_).count() -
        result_.finisher_seconds;
  phase_ = Phase::done;
  release();
}

int64_t Session::serial_steps_bound(const SessionOptions& o) {
  return SessionMethod::make(o)->serial_steps_bound(o);
}

int64_t Session::kv_tokens_needed(const SessionOptions& o, const Formatting& fmt,
                                  const TextCodec& codec, const ModelConfig& config,
                                  int64_t prompt_tokens) {
  const int64_t ctx = o.max_context > 0 ? o.max_context : config.max_position_embeddings;
  const std::unique_ptr<SessionMethod> method = SessionMethod::make(o);
  const int64_t steps = method->serial_steps_bound(o);
  const bool indep = o.layout == Layout::independent;
  KvNeed need;
  need.prompt_tokens = prompt_tokens;
  need.n_workers = o.n_workers;
  need.budget = steps;
  need.context = ctx;
  need.finisher_max_tokens = o.finisher ? fmt.finisher.max_tokens : 0;
  need.independent = indep;
  need.kv_budget = o.kv.budget;
  need.step_tokens = o.kv.step_tokens;
  if (steps > 0) {
    // The openings as open_step feeds them, at the largest step number the run can reach (a step
    // number's tokens grow with its digits).
    auto count = [&](const std::string& text) {
      return static_cast<int64_t>(codec.encode(text).size());
    };
    const int step = static_cast<int>(std::min<int64_t>(steps + 1, INT32_MAX));
    const bool check = method->collaborates() && !fmt.collab_check.text.empty();
    for (int w = 0; w < (indep ? 1 : o.n_workers); ++w) {
      const int64_t plain = count(fmt.step_start(w, step, false));
      need.opening_tokens = std::max(need.opening_tokens, plain);
      // Summarise-and-drop: a summary's opening; the separator that closes one at
      // summary.max_tokens is fed with its last token and the next step's (shorter) opening.
      if (o.kv.budget > 0 && o.kv.policy == KvPolicy::summarise)
        need.opening_tokens = std::max(
            need.opening_tokens, count(fmt.summary_start(w, step)) + count(fmt.step_separator));
      if (check)
        need.check_tokens =
            std::max(need.check_tokens, count(fmt.step_start(w, step, true)) - plain);
    }
    need.collab_every = check ? (o.collab_every >= 0 ? o.collab_every : fmt.collab_check.every) : 0;
    method->add_kv_need(need, o, fmt, codec, steps);
  }
  return run_kv_tokens(need);
}

LayoutState Session::layout_state() const {
  LayoutState s;
  s.layout = opt_.layout;
  s.history = history_;
  s.closing = closing_;
  for (auto& w : workers_) s.current.push_back(w.cur);
  s.text = consts_;
  return s;
}

// Block-local index of every fed token (lengths after earlier appends of this forward).
void Session::assign_indices(SessionStep& step) {
  std::vector<std::pair<BlockId, int64_t>> len;  // few blocks per forward
  for (size_t i = 0; i < step.batch.tokens.size(); ++i) {
    const BlockId b = step.batch.tokens[i].block;
    auto it = std::find_if(len.begin(), len.end(), [b](auto& p) { return p.first == b; });
    if (it == len.end()) it = len.insert(len.end(), {b, be_.block_len(b)});
    step.fed[i].index = it->second++;
  }
}

void Session::record_tokens(const SessionStep& step) {
  for (const TokenInput& t : step.batch.tokens) block_tokens_[t.block].push_back(t.token_id);
}

void Session::start(const std::vector<int32_t>& prompt) {
  if (started_) fail("a session can be started once; create a new session for another run");
  if (prompt.empty()) fail("the prompt is empty; give a problem text");
  if (static_cast<int64_t>(prompt.size()) >= max_context_)
    fail(
        "the prompt has {} tokens, which leaves no room to generate within the context limit of {} "
        "tokens; shorten the problem{}",
        prompt.size(), max_context_, raise_context_hint());
  check_kv_fits(
      opt_.kv, static_cast<int64_t>(prompt.size()), opt_.n_workers, fmt_,
      [&](const std::string& t) { return static_cast<int64_t>(codec_.encode(t).size()); });
  started_ = true;
  prompt_ = prompt;
  protected_.assign(1, TokenRange{0, static_cast<int64_t>(prompt.size())});  // prompt and rules
  result_ = SessionResult{};
  result_.tokens_per_worker.assign(opt_.n_workers, 0);
  method_->start_result(result_, opt_.n_workers);
  result_.prompt_tokens = static_cast<int64_t>(prompt.size());
  workers_.assign(opt_.n_workers, WorkerState{});
  phase_ = Phase::prefill;
}

bool Session::plan(SessionStep& step, int64_t max_prompt_tokens) {
  if (!started_) fail("Session::plan before start(prompt)");
  step.batch.tokens.clear();
  step.batch.views.clear();
  step.fed.clear();
  step.rows.clear();
  step.sampling.clear();
  step.banned = &forbidden_ids_;
  step.host_logits = !opt_.device_sampling;
  step.keep_logits = opt_.keep_logits;
  step.prompt_tokens = 0;
  step.logits.clear();
  step.drawn.clear();
  step.forward_seconds = 0;
  switch (phase_) {
    case Phase::prefill:
      return plan_prefill(step, max_prompt_tokens);
    case Phase::decode:
      if (plan_decode(step)) return true;
      // The run ended before this forward: the final finisher, if any.
      if (phase_ != Phase::finisher) return false;
      [[fallthrough]];
    case Phase::finisher:
      if (opt_.interrupt && opt_.interrupt->load()) {  // as between decode steps
        abandon_finishers();
        return false;
      }
      plan_finisher(step);
      return true;
    default:
      return false;
  }
}

void Session::create_blocks() {
  const int n = opt_.n_workers;
  history_ = new_block();
  if (n > 1 && opt_.layout != Layout::interleaved && opt_.layout != Layout::independent) {
    for (int w = 0; w < n; ++w) {
      consts_.others_header.push_back(const_block(fmt_.others_header(w)));
      consts_.sep_own_header.push_back(
          const_block(fmt_.layout.other_separator + fmt_.own_header(w)));
    }
  }
  // Between the others' steps, and in the finisher's view.
  if (n > 1 || opt_.finisher) consts_.sep = const_block(fmt_.layout.other_separator);
}

PrefixHit Session::cached_prompt() const {
  if (!prefix_cache_ || phase_ != Phase::prefill || history_ >= 0) return {};
  return be_.find_prefix(prompt_.data(), static_cast<int64_t>(prompt_.size()) - 1);
}

int64_t Session::share_prompt() {
  if (phase_ != Phase::prefill || history_ >= 0)
    fail("Session::share_prompt: call it once, after start() and before the first plan()");
  create_blocks();
  if (!prefix_cache_) return 0;
  const int64_t n =
      be_.share_prefix(history_, prompt_.data(), static_cast<int64_t>(prompt_.size()) - 1);
  prompt_fed_ = static_cast<size_t>(n);
  block_tokens_[history_].assign(prompt_.begin(), prompt_.begin() + n);
  result_.prompt_cached_tokens = n;
  return n;
}

bool Session::plan_prefill(SessionStep& step, int64_t max_prompt_tokens) {
  const int n = opt_.n_workers;
  if (history_ < 0) create_blocks();
  const size_t left = prompt_.size() - prompt_fed_;
  const size_t take =
      static_cast<size_t>(std::min<int64_t>(left, std::max<int64_t>(0, max_prompt_tokens)));
  if (take == 0) return false;
  const bool last = take == left;
  ForwardBatch& batch = step.batch;
  batch.views.push_back({history_});
  for (size_t i = prompt_fed_; i < prompt_fed_ + take; ++i) {
    batch.tokens.push_back({prompt_[i], 0, history_, last && i + 1 == prompt_.size()});
    step.fed.push_back({prompt_[i], -1, 0, history_, 0, FeedRole::prompt});
  }
  step.prompt_tokens = static_cast<int64_t>(take);
  prompt_fed_ += take;
  if (last) {
    for (auto& [text, b] : const_texts_) {
      const int32_t writer = static_cast<int32_t>(batch.views.size());
      batch.views.push_back({history_, b});
      for (int32_t t : codec_.encode(text)) {
        batch.tokens.push_back({t, writer, b, false});
        step.fed.push_back({t, -1, 0, b, 0, FeedRole::constant});
      }
    }
    step.rows.push_back(-1);
    // Workers whose first step opens with nothing continue the prompt directly (formatting
    // "plain"): they draw from the prompt row on the host.
    for (int w = 0; w < n; ++w)
      if (method_->continues_prompt(*this, w)) step.host_logits = true;
    if (!step.host_logits) step.sampling.push_back(RowSampling{});  // drawn, not used
  }
  assign_indices(step);
  return true;
}

StepReport Session::complete(SessionStep& step) {
  StepReport rep;
  rep.tokens.assign(opt_.n_workers, 0);
  record_tokens(step);
  switch (phase_) {
    case Phase::prefill:
      complete_prefill(step, rep);
      break;
    case Phase::decode:
      complete_decode(step, rep);
      break;
    case Phase::finisher:
      complete_finisher(step, rep);
      break;
    default:
      fail("Session::complete without a planned step");
  }
  rep.serial_step = serial_;
  rep.finished = phase_ == Phase::done;
  return rep;
}

void Session::complete_prefill(SessionStep& step, StepReport& rep) {
  rep.phase = StepReport::Phase::prefill;
  result_.prefill_seconds += step.forward_seconds;
  const bool last = prompt_fed_ == prompt_.size();
  // The prompt's pages computed so far may now serve other sessions (they are never written
  // again: the history grows into pages of its own).
  if (prefix_cache_) be_.cache_prefix(history_, prompt_.data(), static_cast<int64_t>(prompt_fed_));
  if (obs_) {
    ForwardRecord rec{0,
                      step.batch.views,
                      step.fed,
                      {},
                      step.rows,
                      (step.host_logits || step.keep_logits) && last ? &step.logits : nullptr,
                      ForwardKind::prefill,
                      {},
                      false};
    obs_->on_forward(rec);
  }
  if (!last) return;
  phase_ = Phase::decode;
  decode_start_ = std::chrono::steady_clock::now();
  const int n = opt_.n_workers;
  method_->begin(*this);
  // A worker with an empty step opening continues the prompt directly (formatting "plain").
  bool stop = false;
  for (int w = 0; w < n && !stop; ++w)
    if (workers_[w].active && workers_[w].feed.empty())
      stop = on_sampled(w, sample(w, step.logits.data()), rep);
  if (stop) {
    result_.stop_reason = StopReason::answer;
    stop_ = true;
    advance();
  } else {
    note_capped();
  }
}

void Session::advance() {
  if (next_snapshot_ < opt_.snapshots.size() && opt_.snapshots[next_snapshot_] == serial_) {
    ++next_snapshot_;
    begin_finisher(serial_, false);
    return;
  }
  if (stop_) end_decoding();
}

void Session::end_decoding() {
  result_.serial_steps = serial_;
  result_.decode_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start_).count() -
      result_.finisher_seconds;
  method_->on_decoding_end(*this);
  if (!result_.answer && result_.stop_reason != StopReason::interrupted && opt_.finisher) {
    begin_finisher(serial_, true);
    return;
  }
  finalize();
}

void Session::finalize() {
  method_->settle(result_);
  for (; next_snapshot_ < opt_.snapshots.size(); ++next_snapshot_)  // budgets past the end
    method_->unreached_snapshot(result_, opt_.snapshots[next_snapshot_]);
  result_.serial_steps = serial_;
  result_.history_text = codec_.bytes(block_tokens_[history_]);
  for (BlockId b : closing_) result_.history_text += codec_.bytes(block_tokens_[b]);
  for (auto& w : workers_)
    result_.unfinished.push_back(w.cur >= 0 ? codec_.bytes(block_tokens_[w.cur]) : "");
  phase_ = Phase::done;
}

SessionResult Session::run(const std::vector<int32_t>& prompt) {
  start(prompt);
  SessionStep step;
  while (plan(step, INT64_MAX)) {
    SessionStep* one = &step;
    run_forward(be_, std::span<SessionStep*>(&one, 1));
    complete(step);
  }
  return result_;
}

}  // namespace hogwild
