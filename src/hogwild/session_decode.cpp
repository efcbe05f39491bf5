// The session's decode phase (session.h, "Life of a run"): a serial step planned (every active
// worker's pending tokens, notes, the views) and completed (promotion of the closing steps into
// the history, notes, the KV budget's forgetting, then each row's token: step ends, answers,
// stopping), and how a worker's step opens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "hogwild/answer.h"
#include "hogwild/kv_budget.h"
#include "hogwild/method.h"
#include "hogwild/session.h"
#include "hogwild/steps.h"

namespace hogwild {

// Index of the first token of the last sentence of a finished step's tokens: the token after the
// last sentence end ('.', '!' or '?' followed by white space) that comes before the step's own
// final one; tokens.size() (nothing) when the step is one sentence. After a step's working, its
// last sentence is usually its conclusion (a part's result), which later steps read: the KV
// budget keeps it (docs/ARCHITECTURE.md §11).
namespace {
int64_t last_sentence_start(const TextCodec& codec, const std::vector<int32_t>& tokens) {
  std::string text;
  std::vector<size_t> starts;  // byte offset of each token
  for (int32_t t : tokens) {
    starts.push_back(text.size());
    text += codec.token_bytes(t);
  }
  size_t end = text.find_last_not_of(" \t\r\n");  // the final sentence's end
  const int64_t none = static_cast<int64_t>(tokens.size());
  if (end == std::string::npos || end == 0) return none;
  size_t cut = std::string::npos;  // the byte after the previous sentence end
  for (size_t i = end; i-- > 0;) {
    const char c = text[i];
    if ((c == '.' || c == '!' || c == '?') && i + 1 < text.size() &&
        (text[i + 1] == ' ' || text[i + 1] == '\n')) {
      cut = i + 1;
      break;
    }
  }
  if (cut == std::string::npos) return none;
  // The token holding byte `cut` (its sentence's first byte or the white space before it).
  const auto it = std::upper_bound(starts.begin(), starts.end(), cut);
  return static_cast<int64_t>(it - starts.begin()) - 1;
}
}  // namespace

bool Session::plan_decode(SessionStep& step) {
  const int n = opt_.n_workers;
  auto end = [&](StopReason why) {  // none: keep the reason already set
    if (why != StopReason::none) result_.stop_reason = why;
    end_decoding();
    return false;
  };
  if (opt_.interrupt && opt_.interrupt->load()) return end(StopReason::interrupted);
  if (opt_.budget > 0 && serial_ >= opt_.budget) return end(StopReason::budget);
  method_->before_forward(*this);
  ForwardBatch& batch = step.batch;
  for (int w = 0; w < n; ++w) {
    const WorkerState& ws = workers_[w];
    auto& f = ws.feed;
    if (f.empty() || (!ws.active && !ws.drain)) continue;
    for (size_t i = 0; i < f.size(); ++i) {  // a draining worker's token has no logits row
      batch.tokens.push_back({f[i].token, w, f[i].block, ws.active && i + 1 == f.size()});
      step.fed.push_back({f[i].token, w, f[i].step, f[i].block, 0, f[i].role});
    }
    if (ws.active) step.rows.push_back(w);
  }
  if (step.rows.empty()) {
    step.batch = ForwardBatch{};
    step.fed.clear();
    return end(result_.stop_reason == StopReason::none ? StopReason::eos : StopReason::none);
  }
  batch.views = build_views(layout_state());
  if (opt_.kv.budget > 0 && opt_.kv.policy == KvPolicy::evict)
    batch.score_blocks = {history_};  // what the workers read of it
  plan_notes(step);
  // The longest view after this forward must fit the context.
  if (longest_view(batch) > max_context_) {
    if (serial_ == 0)  // as a prompt that fills the context: an error, not a 0-step run
      fail(
          "the prompt ({} tokens) and the layout's texts leave no room for the first serial step "
          "within the context limit of {} tokens; shorten the problem{}",
          prompt_.size(), max_context_, raise_context_hint());
    step.batch = ForwardBatch{};
    step.fed.clear();
    step.rows.clear();
    return end(StopReason::max_context);
  }
  if (opt_.kv.budget > 0 && longest_step(batch) > opt_.kv.step_tokens) {
    // The KV reservation counts each step at kv.step_tokens (kv_budget.h): the run ends here,
    // as at the context limit.
    step.batch = ForwardBatch{};
    step.fed.clear();
    step.rows.clear();
    return end(StopReason::max_context);
  }
  if (opt_.device_sampling) plan_device_sampling(step);
  assign_indices(step);
  return true;
}

int64_t Session::longest_step(const ForwardBatch& batch) const {
  int64_t n = 0;
  for (const WorkerState& ws : workers_) {
    if (ws.cur < 0) continue;
    const int64_t fed = std::count_if(batch.tokens.begin(), batch.tokens.end(),
                                      [&](const TokenInput& t) { return t.block == ws.cur; });
    n = std::max(n, be_.block_len(ws.cur) + fed);
  }
  return n;
}

void Session::plan_notes(SessionStep& step) {
  // Notes: each in its own block, written by a pseudo-writer reading the history as it will be.
  ForwardBatch& batch = step.batch;
  feeding_notes_.clear();
  for (auto& [author, note] : notes_) {
    const BlockId nb = new_block();
    std::vector<BlockId> view = {history_};
    view.insert(view.end(), closing_.begin(), closing_.end());
    for (auto& [b, text] : feeding_notes_) view.push_back(b);
    view.push_back(nb);
    const int32_t writer = static_cast<int32_t>(batch.views.size());
    batch.views.push_back(view);
    const std::string text = fmt_.note_text(author, note);
    for (int32_t t : codec_.encode(text)) {
      batch.tokens.push_back({t, writer, nb, false});
      step.fed.push_back({t, -1, 0, nb, 0, FeedRole::note});
    }
    feeding_notes_.emplace_back(nb, author);
  }
  notes_.clear();
}

int64_t Session::longest_view(const ForwardBatch& batch) const {
  int64_t longest = 0;
  for (auto& v : batch.views) {
    int64_t len = 0;
    for (BlockId b : v) {
      len += be_.block_len(b);
      for (auto& t : batch.tokens) len += t.block == b;
    }
    longest = std::max(longest, len);
  }
  return longest;
}

void Session::plan_device_sampling(SessionStep& step) {
  // The one sampling contract when the picker describes every row (all or none).
  step.sampling.resize(step.rows.size());
  bool all = true;
  for (size_t r = 0; r < step.rows.size(); ++r) {
    all = picker_.device_row(step.rows[r], step.sampling[r]) && all;
    step.sampling[r].banned = 0;
  }
  step.host_logits = !all;
  if (!all) step.sampling.clear();
}

void Session::complete_decode(SessionStep& step, StepReport& rep) {
  rep.phase = StepReport::Phase::decode;
  const int64_t vocab = be_.config().vocab_size;
  serial_ += 1;
  result_.decode_forward_seconds += step.forward_seconds;
  for (int w : step.rows) workers_[w].feed.clear();
  for (WorkerState& ws : workers_)
    if (ws.drain) ws.feed.clear(), ws.drain = false;
  if (obs_) {
    ForwardRecord rec{serial_,
                      step.batch.views,
                      step.fed,
                      closing_steps_,
                      step.rows,
                      step.host_logits || step.keep_logits ? &step.logits : nullptr,
                      ForwardKind::step,
                      closing_,
                      false,
                      step.scores.empty() ? nullptr : &step.scores[0]};
    obs_->on_forward(rec);
  }
  promote_closing(rep);
  append_notes();
  if (opt_.kv.budget > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    if (opt_.kv.policy == KvPolicy::summarise)
      summarise_history();
    else
      forget_history(step);
    result_.forget_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  bool stop = false;
  for (size_t r = 0; r < step.rows.size(); ++r) {
    int32_t t;
    if (!step.host_logits) {
      t = step.drawn[r];
      if (t < 0 || t >= vocab) fail("device sampling returned id {} outside the vocabulary", t);
      picker_.picked(step.rows[r], t);
    } else {
      t = sample(step.rows[r], step.logits.data() + r * vocab);
    }
    if (stop)  // this forward's other rows were computed: their tokens count, nothing follows
      count_unfed(step.rows[r], t, rep);
    else
      stop = on_sampled(step.rows[r], t, rep);
  }
  if (stop) {
    result_.stop_reason = StopReason::answer;
    stop_ = true;
  }
  if (!stop) note_capped();
  advance();
}

void Session::promote_closing(StepReport& rep) {
  for (BlockId b : closing_) {  // promotion, finishing order (docs/ARCHITECTURE.md)
    const int64_t at = static_cast<int64_t>(block_tokens_[history_].size());
    if (static_cast<size_t>(b) < opening_len_.size() && opening_len_[b] > 0)
      protected_.push_back({at, at + opening_len_[b]});  // the step's header (its opening)
    if (opt_.kv.budget > 0) {  // the step's conclusion: the last of its sentences
      const int64_t from = last_sentence_start(codec_, block_tokens_[b]);
      const int64_t len = static_cast<int64_t>(block_tokens_[b].size());
      if (from < len) protected_.push_back({at + from, at + len});
    }
    if (b == summary_block_) {  // the summary joins the history: what it sums up goes
      summary_joined_ = {at, at + static_cast<int64_t>(block_tokens_[b].size())};
      steps_since_summary_ = 0;
    } else {
      steps_since_summary_ += 1;
    }
    be_.append_block(history_, b);
    auto& h = block_tokens_[history_];
    h.insert(h.end(), block_tokens_[b].begin(), block_tokens_[b].end());
    block_tokens_[b].clear();
    be_.free_block(b);
    owned_.erase(std::find(owned_.begin(), owned_.end(), b));
    rep.promotions += 1;
  }
  closing_.clear();
  closing_steps_.clear();
}

void Session::append_notes() {
  for (auto& [b, author] : feeding_notes_) {  // notes follow the closing steps in the history
    const int64_t at = static_cast<int64_t>(block_tokens_[history_].size());
    protected_.push_back({at, at + static_cast<int64_t>(block_tokens_[b].size())});
    note_ranges_.push_back(protected_.back());
    be_.append_block(history_, b);
    auto& h = block_tokens_[history_];
    h.insert(h.end(), block_tokens_[b].begin(), block_tokens_[b].end());
    const std::string text = codec_.bytes(block_tokens_[b]);
    block_tokens_[b].clear();
    be_.free_block(b);
    owned_.erase(std::find(owned_.begin(), owned_.end(), b));
    if (obs_) obs_->on_note(author, text, serial_);
  }
  feeding_notes_.clear();
}

// Every worker has stopped and one of them at its token cap: the session stops for max_tokens
// (whether the cap was reached on the prompt's row or in a serial step). Workers that all drew
// an end-of-sequence id leave the reason to plan_decode (eos), also when it was their last token
// allowed.
void Session::note_capped() {
  if (std::any_of(workers_.begin(), workers_.end(), [](auto& w) { return w.active; })) return;
  if (std::any_of(workers_.begin(), workers_.end(), [](auto& w) { return w.capped; }))
    result_.stop_reason = StopReason::max_tokens;
}

// Opens worker w's next step: a new block (except contiguous and independent after the first),
// the step prefix and, when due, the collaboration-check question queued as step_start feeds.
void Session::start_step(int w, bool first) {
  WorkerState& ws = workers_[w];
  const bool indep = opt_.layout == Layout::independent;
  const BlockId block =
      first || (opt_.layout != Layout::contiguous && !indep) ? new_block() : ws.cur;
  if (!first && summary_due_ && summary_worker_ < 0) {
    // Summarise-and-drop: this worker's next step is the summary (the first worker whose step
    // ends once it is due; rows are completed in worker order).
    summary_due_ = false;
    summary_worker_ = w;
    summary_step_ = ws.step + 1;
    summary_block_ = block;
    summary_generated_ = 0;
    result_.summaries_started += 1;
    open_step(w, block, fmt_.summary_start(w, ws.step + 1), false);
    return;
  }
  bool& due = indep ? ws.collab_due : collab_due_;  // independent: each worker's own tokens
  const bool check = due && !fmt_.collab_check.text.empty();
  if (check) due = false;
  open_step(w, block, fmt_.step_start(indep ? 0 : w, ws.step + 1, check), check);
}

void Session::open_step(int w, BlockId block, const std::string& text, bool collab_check) {
  WorkerState& ws = workers_[w];
  ws.cur = block;
  ws.step += 1;
  ws.step_bytes.clear();
  const std::vector<int32_t> ids = codec_.encode(text);
  for (int32_t t : ids) {
    ws.feed.push_back({t, ws.cur, ws.step, FeedRole::step_start});
    ws.step_bytes += codec_.token_bytes(t);
  }
  if (static_cast<size_t>(block) >= opening_len_.size()) opening_len_.resize(block + 1, 0);
  opening_len_[block] = static_cast<int64_t>(ids.size());
  if (obs_) obs_->on_step_start(w, ws.step, ws.step_bytes, collab_check);
}

int32_t Session::sample(int w, const float* row) {
  const int64_t vocab = be_.config().vocab_size;
  std::vector<float> l(row, row + vocab);
  for (int64_t i = 0; i < vocab; ++i)
    if (forbidden_[i]) l[i] = -std::numeric_limits<float>::infinity();
  int32_t t = picker_.pick(w, l);
  if (t < 0 || t >= vocab) fail("token picker returned id {} outside the vocabulary", t);
  return t;
}

// A token sampled in the forward that ended the run, after the row whose answer ended it: counted
// and reported (on_token) as generated, but neither fed nor scanned for a step end.
void Session::count_generated(int w, StepReport& rep) {
  workers_[w].generated += 1;
  result_.tokens_per_worker[w] += 1;
  rep.tokens[w] += 1;
  total_generated_ += 1;
}

void Session::count_unfed(int w, int32_t token, StepReport& rep) {
  const WorkerState& ws = workers_[w];
  count_generated(w, rep);
  TokenEvent ev{
      w, ws.step, serial_, token, codec_.token_bytes(token), is_eos(token) && !forbidden_[token]};
  if (obs_) obs_->on_token(ev);
}

bool Session::on_sampled(int w, int32_t token, StepReport& rep) {
  WorkerState& ws = workers_[w];
  count_generated(w, rep);
  if (collab_every_ > 0 && opt_.layout == Layout::independent)
    ws.collab_due = ws.collab_due || ws.generated % collab_every_ == 0;
  else if (collab_every_ > 0 && total_generated_ % collab_every_ == 0)
    collab_due_ = true;
  TokenEvent ev{w, ws.step, serial_, token, codec_.token_bytes(token), false};
  if (is_eos(token) && !forbidden_[token]) {
    ev.eos = true;
    ws.active = false;
    summary_abandoned(w);
    if (obs_) obs_->on_token(ev);
    if (method_->take_token(*this, w, true, rep)) return false;
    const std::optional<std::string> answer = step_ended(w, rep);
    return method_->on_eos(*this, w, answer, rep);
  }
  if (obs_) obs_->on_token(ev);
  ws.step_bytes += ev.bytes;
  ws.feed.push_back({token, ws.cur, ws.step, FeedRole::generated});
  if (method_->take_token(*this, w, false, rep)) return false;
  StepEnd end = find_step_end(ws.step_bytes, ev.bytes.size(), fmt_.step_separator);
  if (w == summary_worker_ && ws.cur == summary_block_ &&
      ++summary_generated_ >= fmt_.summary.max_tokens && !end.ended) {
    // A summary at its length: the session closes it with the step separator, fed after this
    // token into the same block, so that it joins the history as a finished step.
    for (int32_t t : codec_.encode(fmt_.step_separator)) {
      ws.feed.push_back({t, ws.cur, ws.step, FeedRole::step_end});
      ws.step_bytes += codec_.token_bytes(t);
    }
    end.ended = true;
  }
  if (opt_.max_tokens_per_worker > 0 && ws.generated >= opt_.max_tokens_per_worker) {
    summary_abandoned(w);
    ws.active = false;
    ws.capped = true;
    ws.feed.clear();  // the worker stops; its last token is not fed (as after EOS)
    return method_->on_token_cap(*this, w, rep);
  }
  if (!end.ended) return false;
  const std::optional<std::string> answer = step_ended(w, rep);
  return method_->on_step_end(*this, w, answer, rep);
}

std::optional<std::string> Session::step_ended(int w, StepReport& rep) {
  const WorkerState& ws = workers_[w];
  std::optional<std::string> answer = step_answer(ws.step_bytes, fmt_.answer);
  rep.steps_finished += 1;
  if (obs_) obs_->on_step_end(w, ws.step, ws.step_bytes, answer);
  return answer;
}

bool Session::end_with_answer(int w, const std::optional<std::string>& answer, StepReport& rep) {
  result_.answer = answer;
  result_.answer_worker = w;
  rep.answer = true;
  return true;
}

void Session::next_step(int w) {
  const WorkerState& ws = workers_[w];
  if (opt_.layout != Layout::contiguous && opt_.layout != Layout::independent) {
    // Finishing order, ties by worker index; except that a summary joins the history after the
    // steps that end in the same serial step (it sums them up too: it read all but their last
    // token), so that after its drop only the prompt, the notes and the summary are read.
    const bool before_summary = !closing_.empty() && closing_.back() == summary_block_;
    closing_.insert(before_summary ? closing_.end() - 1 : closing_.end(), ws.cur);
    closing_steps_.insert(before_summary ? closing_steps_.end() - 1 : closing_steps_.end(),
                          {w, ws.step});
  }
  start_step(w, false);
}

void Session::summary_abandoned(int w) {
  if (w != summary_worker_ || workers_[w].cur != summary_block_) return;
  summary_worker_ = -1;  // not in the history: nothing is dropped; the next one is due again
  summary_block_ = -1;
}

void Session::summarise_history() {
  const int64_t len = static_cast<int64_t>(block_tokens_[history_].size());
  std::vector<TokenRange> drop;
  ForgetEvent ev;
  if (summary_joined_.first >= 0) {  // the summary joined the history in this serial step
    drop = summarised_ranges(static_cast<int64_t>(prompt_.size()), summary_joined_.first,
                             note_ranges_, history_gaps_);
    ev.summary_worker = summary_worker_;
    ev.summary_step = summary_step_;
    ev.summary = summary_joined_;
    summary_end_ = summary_joined_.second;
    summary_worker_ = -1;
    summary_block_ = -1;
    summary_joined_ = {-1, -1};
  }
  if (ev.summary_worker >= 0) forget_ranges(std::move(drop), std::move(ev));
  // The memory cap, as for evict (an event of its own): the history never holds more pages than
  // were reserved. The summary is started ahead of the budget, so this cuts only when the others
  // wrote more than that room while it was written (step openings, steps begun before it); it
  // keeps the pages touching the prompt or the last summary (everything between is forgotten),
  // so the cap is reached since the budget holds both (check_kv_summary_fits).
  const std::vector<TokenRange> pages = outside_ranges(
      pages_over_cap(len, history_gaps_, std::max<int64_t>(summary_end_, prompt_.size()), 0,
                     kKvPageTokens, history_page_cap(opt_.kv.budget, kKvPageTokens)),
      history_gaps_);
  if (!pages.empty()) forget_ranges(pages, ForgetEvent{});
  // A summary is due when the tokens still read pass the trigger and some step joined the
  // history since the last summary (else it would sum up only itself).
  if (summary_worker_ < 0 && steps_since_summary_ > 0 &&
      kept_tokens(len, history_gaps_) >
          summary_trigger(opt_.kv.budget, opt_.n_workers, fmt_.summary.max_tokens))
    summary_due_ = true;
}

void Session::forget_ranges(std::vector<TokenRange> drop, ForgetEvent ev) {
  const std::vector<int32_t>& h = block_tokens_[history_];
  const int64_t len = static_cast<int64_t>(h.size());
  ev.serial_step = serial_;
  ev.block = history_;
  for (const auto& [b, e] : drop) {
    be_.forget_tokens(history_, b, e);
    history_gaps_.push_back({b, e});
    ev.ranges.push_back({b, e});
    ev.texts.push_back(codec_.bytes(std::vector<int32_t>(h.begin() + b, h.begin() + e)));
  }
  history_gaps_ = merge_ranges(std::move(history_gaps_));  // as the backend keeps them
  ev.kept = kept_tokens(len, history_gaps_);
  ev.history_len = len;
  result_.forgotten_tokens = len - ev.kept;
  result_.forgotten.push_back(ev);
  if (obs_) obs_->on_forget(ev);
}

std::vector<float> Session::history_redundancy(int64_t len) const {
  // Measured only with the term on and when a choice is due: the history passes the budget and
  // not every candidate has to go (then their order changes nothing, and all count 0).
  const int64_t over = kept_tokens(len, history_gaps_) - opt_.kv.budget;
  if (opt_.kv.redundancy_weight <= 0 || over <= 0) return {};
  const std::vector<ForgetCandidate> cand =
      forget_candidates(len, history_gaps_, protected_, opt_.kv);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  int64_t may_go = 0;
  for (const ForgetCandidate& c : cand) {
    chunks.emplace_back(c.begin, c.begin + opt_.kv.chunk);
    may_go += c.kept;
  }
  if (may_go <= over) return std::vector<float>(cand.size(), 0.0f);
  return be_.key_redundancy(history_, chunks);
}

void Session::forget_history(const SessionStep& step) {
  // This forward's scores of the history as it was read (before this step's promotions).
  if (!step.scores.empty()) scores_.push(step.scores[0]);
  const std::vector<int32_t>& h = block_tokens_[history_];
  const int64_t len = static_cast<int64_t>(h.size());
  std::vector<TokenRange> drop = choose_forgotten(
      len, history_gaps_, protected_, scores_.max_scores(len), opt_.kv, history_redundancy(len));
  // The memory cap: whole pages beyond it go too, so the history holds what was reserved.
  std::vector<TokenRange> after = history_gaps_;
  after.insert(after.end(), drop.begin(), drop.end());
  const std::vector<TokenRange> pages =
      pages_over_cap(len, merge_ranges(after), static_cast<int64_t>(prompt_.size()), opt_.kv.recent,
                     kKvPageTokens, history_page_cap(opt_.kv.budget, kKvPageTokens));
  if (!pages.empty()) {
    drop.insert(drop.end(), pages.begin(), pages.end());
    drop = merge_ranges(std::move(drop));
  }
  drop = outside_ranges(drop, history_gaps_);  // only what is not forgotten yet
  if (drop.empty()) return;
  forget_ranges(std::move(drop), ForgetEvent{});
}

}  // namespace hogwild
