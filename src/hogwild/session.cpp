// Session: prefill, the serial-step loop, step promotion, stopping, finisher (see session.h).
#include "hogwild/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "hogwild/answer.h"
#include "hogwild/steps.h"
#include "sampling/stop_policy.h"

namespace hogwild {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Session::Session(Backend& backend, const TextCodec& codec, const Formatting& formatting,
                 SessionOptions options, TokenPicker& picker)
    : be_(backend), codec_(codec), fmt_(formatting), opt_(std::move(options)), picker_(picker) {
  fmt_.check_workers(opt_.n_workers);
  if (opt_.budget < 0)
    fail("budget must be >= 0 serial steps (0 = unlimited), got {}", opt_.budget);
  for (int64_t s : opt_.snapshots)
    if (s <= 0) fail("snapshot budgets must be positive serial-step counts, got {}", s);
  std::sort(opt_.snapshots.begin(), opt_.snapshots.end());
  opt_.snapshots.erase(std::unique(opt_.snapshots.begin(), opt_.snapshots.end()),
                       opt_.snapshots.end());
  collab_every_ = opt_.collab_every >= 0 ? opt_.collab_every : fmt_.collab_check.every;
  max_context_ = opt_.max_context > 0 ? opt_.max_context : be_.config().max_position_embeddings;
  if (fmt_.finisher.suffix.empty())
    fail("formatting '{}': finisher.suffix is empty; the finisher needs text to continue from",
         fmt_.name);
  const ModelConfig& cfg = be_.config();
  eos_ = eos_id_union(codec_.eos_ids(), cfg.eos_token_id,
                      std::vector<int64_t>(opt_.extra_eos.begin(), opt_.extra_eos.end()));
  build_forbidden();
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
  BlockId b = be_.new_block();
  const_texts_.emplace_back(text, b);
  return b;
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

// Runs one forward; fills fed[i].index (block-local index written) and block_tokens_.
// With device_rows: samples on the device (Backend::forward_sample) into *drawn, logits untouched.
void Session::forward(ForwardBatch& batch, std::vector<FedToken>& fed, std::vector<float>& logits,
                      const std::vector<RowSampling>* device_rows, std::vector<int32_t>* drawn) {
  std::vector<int64_t> len;  // block lengths after this forward's appends, by BlockId
  auto grow = [&](BlockId b) {
    if (static_cast<size_t>(b) >= len.size()) len.resize(b + 1, -1);
    if (len[b] < 0) len[b] = be_.block_len(b);
  };
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    BlockId b = batch.tokens[i].block;
    grow(b);
    fed[i].index = len[b]++;
  }
  if (device_rows)
    be_.forward_sample(batch, forbidden_ids_, *device_rows, *drawn,
                       opt_.keep_logits ? &logits : nullptr);
  else
    be_.forward(batch, logits);
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    BlockId b = batch.tokens[i].block;
    if (static_cast<size_t>(b) >= block_tokens_.size()) block_tokens_.resize(b + 1);
    block_tokens_[b].push_back(batch.tokens[i].token_id);
  }
}

void Session::prefill(const std::vector<int32_t>& prompt, std::vector<float>& logits) {
  const int n = opt_.n_workers;
  history_ = be_.new_block();
  if (n > 1 && opt_.layout != Layout::interleaved) {
    for (int w = 0; w < n; ++w) {
      consts_.others_header.push_back(const_block(fmt_.others_header(w)));
      consts_.sep_own_header.push_back(
          const_block(fmt_.layout.other_separator + fmt_.own_header(w)));
    }
  }
  consts_.sep = const_block(fmt_.layout.other_separator);  // also used by the finisher

  ForwardBatch batch;
  std::vector<FedToken> fed;
  batch.views.push_back({history_});
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.tokens.push_back({prompt[i], 0, history_, i + 1 == prompt.size()});
    fed.push_back({prompt[i], -1, 0, history_, 0, FeedRole::prompt});
  }
  for (auto& [text, b] : const_texts_) {
    const int32_t writer = static_cast<int32_t>(batch.views.size());
    batch.views.push_back({history_, b});
    std::vector<int32_t> ids = codec_.encode(text);
    for (int32_t t : ids) {
      batch.tokens.push_back({t, writer, b, false});
      fed.push_back({t, -1, 0, b, 0, FeedRole::constant});
    }
  }
  forward(batch, fed, logits);
  if (obs_) {
    ForwardRecord rec{0, batch.views, fed, {}, {-1}, &logits, ForwardKind::prefill, {}, false};
    obs_->on_forward(rec);
  }
}

// Opens worker w's next step: a new block (except contiguous after the first), the step prefix and,
// when due, the collaboration-check question queued as step_start feeds.
void Session::start_step(int w, bool first) {
  WorkerState& ws = workers_[w];
  if (first || opt_.layout != Layout::contiguous) {
    ws.cur = be_.new_block();
    if (static_cast<size_t>(ws.cur) >= block_tokens_.size()) block_tokens_.resize(ws.cur + 1);
    block_tokens_[ws.cur].clear();
  }
  ws.step += 1;
  const bool check = collab_due_ && !fmt_.collab_check.text.empty();
  if (check) collab_due_ = false;
  std::string text = fmt_.step_start(w, ws.step, check);
  ws.step_bytes.clear();
  for (int32_t t : codec_.encode(text)) {
    ws.feed.push_back({t, ws.cur, ws.step, FeedRole::step_start});
    ws.step_bytes += codec_.token_bytes(t);
  }
  if (obs_) obs_->on_step_start(w, ws.step, ws.step_bytes, check);
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

bool Session::on_sampled(int w, int32_t token) {
  WorkerState& ws = workers_[w];
  ws.generated += 1;
  result_.tokens_per_worker[w] += 1;
  total_generated_ += 1;
  if (collab_every_ > 0 && total_generated_ % collab_every_ == 0) collab_due_ = true;
  TokenEvent ev{w, ws.step, serial_, token, codec_.token_bytes(token), false};
  if (is_eos(token) && !forbidden_[token]) {
    ev.eos = true;
    ws.active = false;
    if (obs_) obs_->on_token(ev);
    auto answer = step_answer(ws.step_bytes, fmt_.answer);
    if (obs_) obs_->on_step_end(w, ws.step, ws.step_bytes, answer);
    if (answer && opt_.stop_on_answer) {
      result_.answer = answer;
      result_.answer_worker = w;
      return true;
    }
    return false;
  }
  if (obs_) obs_->on_token(ev);
  ws.step_bytes += ev.bytes;
  ws.feed.push_back({token, ws.cur, ws.step, FeedRole::generated});
  StepEnd end = find_step_end(ws.step_bytes, ev.bytes.size(), fmt_.step_separator);
  if (opt_.max_tokens_per_worker > 0 && ws.generated >= opt_.max_tokens_per_worker) {
    ws.active = false;
    ws.feed.clear();  // the worker stops; its last token is not fed (as after EOS)
    return false;
  }
  if (!end.ended) return false;
  auto answer = step_answer(ws.step_bytes, fmt_.answer);
  if (obs_) obs_->on_step_end(w, ws.step, ws.step_bytes, answer);
  if (answer && opt_.stop_on_answer) {
    result_.answer = answer;
    result_.answer_worker = w;
    return true;
  }
  if (opt_.layout != Layout::contiguous) {
    closing_.push_back(ws.cur);
    closing_steps_.emplace_back(w, ws.step);
  }
  start_step(w, false);
  return false;
}

SessionResult Session::run(const std::vector<int32_t>& prompt) {
  if (ran_) fail("Session::run may be called once; create a new session for another run");
  ran_ = true;
  if (prompt.empty()) fail("the prompt is empty; give a problem text");
  if (static_cast<int64_t>(prompt.size()) >= max_context_)
    fail(
        "the prompt has {} tokens, which leaves no room to generate within the context limit of {} "
        "tokens; shorten the problem{}",
        prompt.size(), max_context_,
        max_context_ < be_.config().max_position_embeddings
            ? fmt::format(" or raise --max-context (up to the model's {})",
                          be_.config().max_position_embeddings)
            : std::string());
  const int n = opt_.n_workers;
  const int64_t vocab = be_.config().vocab_size;
  result_ = SessionResult{};
  result_.tokens_per_worker.assign(n, 0);
  result_.prompt_tokens = static_cast<int64_t>(prompt.size());
  workers_.assign(n, WorkerState{});

  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits;
  prefill(prompt, logits);
  result_.prefill_seconds = seconds_since(t0);
  std::vector<float> prompt_row(logits.end() - vocab, logits.end());

  auto t1 = std::chrono::steady_clock::now();
  bool stop = false;
  for (int w = 0; w < n; ++w) start_step(w, true);
  // A worker with an empty step opening continues the prompt directly (formatting "plain").
  for (int w = 0; w < n && !stop; ++w)
    if (workers_[w].feed.empty()) stop = on_sampled(w, sample(w, prompt_row.data()));
  if (stop) result_.stop_reason = "answer";

  size_t next_snapshot = 0;
  while (!stop) {
    if (opt_.interrupt && opt_.interrupt->load()) {
      result_.stop_reason = "interrupted";
      break;
    }
    if (opt_.budget > 0 && serial_ >= opt_.budget) {
      result_.stop_reason = "budget";
      break;
    }
    ForwardBatch batch;
    std::vector<FedToken> fed;
    std::vector<int> rows;
    for (int w = 0; w < n; ++w) {
      auto& f = workers_[w].feed;
      if (!workers_[w].active || f.empty()) continue;
      for (size_t i = 0; i < f.size(); ++i) {
        batch.tokens.push_back({f[i].token, w, f[i].block, i + 1 == f.size()});
        fed.push_back({f[i].token, w, f[i].step, f[i].block, 0, f[i].role});
      }
      rows.push_back(w);
    }
    if (rows.empty()) {
      result_.stop_reason = result_.stop_reason.empty() ? "eos" : result_.stop_reason;
      break;
    }
    batch.views = build_views(layout_state());
    // The longest view after this forward must fit the context.
    {
      int64_t longest = 0;
      for (auto& v : batch.views) {
        int64_t len = 0;
        for (BlockId b : v) {
          len += be_.block_len(b);
          for (auto& t : batch.tokens) len += t.block == b;
        }
        longest = std::max(longest, len);
      }
      if (longest > max_context_) {
        if (serial_ == 0)  // as a prompt that fills the context: an error, not a 0-step run
          fail(
              "the prompt ({} tokens) and the layout's texts leave no room for the first serial "
              "step within the context limit of {} tokens; shorten the problem{}",
              prompt.size(), max_context_,
              max_context_ < be_.config().max_position_embeddings
                  ? fmt::format(" or raise --max-context (up to the model's {})",
                                be_.config().max_position_embeddings)
                  : std::string());
        result_.stop_reason = "max_context";
        break;
      }
    }
    serial_ += 1;
    // Device sampling when the backend can and the picker describes every row (all or none).
    bool on_device = opt_.device_sampling && be_.samples_on_device();
    std::vector<RowSampling> device_rows;
    std::vector<int32_t> drawn;
    if (on_device) {
      device_rows.resize(rows.size());
      for (size_t r = 0; r < rows.size(); ++r)
        on_device = picker_.device_row(rows[r], device_rows[r]) && on_device;
    }
    const auto tf = std::chrono::steady_clock::now();
    forward(batch, fed, logits, on_device ? &device_rows : nullptr, &drawn);
    result_.decode_forward_seconds += seconds_since(tf);
    for (int w : rows) workers_[w].feed.clear();
    if (obs_) {
      ForwardRecord rec{serial_, batch.views, fed, closing_steps_, rows,
                        on_device && !opt_.keep_logits ? nullptr : &logits,
                        ForwardKind::step, closing_, false};
      obs_->on_forward(rec);
    }
    for (BlockId b : closing_) {  // promotion, finishing order (DESIGN.md §4)
      be_.append_block(history_, b);
      auto& h = block_tokens_[history_];
      h.insert(h.end(), block_tokens_[b].begin(), block_tokens_[b].end());
      block_tokens_[b].clear();
      be_.free_block(b);
    }
    closing_.clear();
    closing_steps_.clear();
    for (size_t r = 0; r < rows.size(); ++r) {
      int32_t t;
      if (on_device) {
        t = drawn[r];
        if (t < 0 || t >= vocab) fail("device sampling returned id {} outside the vocabulary", t);
        picker_.picked(rows[r], t);
      } else {
        t = sample(rows[r], logits.data() + r * vocab);
      }
      if (stop)  // this forward's other rows were computed: their tokens count, nothing follows
        count_unfed(rows[r], t);
      else
        stop = on_sampled(rows[r], t);
    }
    if (stop) result_.stop_reason = "answer";
    if (!stop && opt_.max_tokens_per_worker > 0 &&
        std::none_of(workers_.begin(), workers_.end(), [](auto& w) { return w.active; }))
      result_.stop_reason = "max_tokens";
    while (next_snapshot < opt_.snapshots.size() && opt_.snapshots[next_snapshot] == serial_) {
      auto t2 = std::chrono::steady_clock::now();
      result_.snapshots.push_back(run_finisher(serial_, true));
      result_.finisher_seconds += seconds_since(t2);
      if (obs_) obs_->on_snapshot(result_.snapshots.back());
      ++next_snapshot;
    }
  }
  result_.serial_steps = serial_;
  result_.decode_seconds = seconds_since(t1) - result_.finisher_seconds;

  if (!result_.answer && result_.stop_reason != "interrupted") {
    auto t2 = std::chrono::steady_clock::now();
    result_.finisher = run_finisher(serial_, false);
    result_.finisher_seconds += seconds_since(t2);
    result_.answer = result_.finisher->answer;
  }
  for (; next_snapshot < opt_.snapshots.size(); ++next_snapshot) {  // budgets past the end
    FinisherResult f;
    f.serial_step = opt_.snapshots[next_snapshot];
    f.answer = result_.answer;
    f.reached = false;
    result_.snapshots.push_back(f);
  }
  result_.history_text = codec_.bytes(block_tokens_[history_]);
  for (BlockId b : closing_) result_.history_text += codec_.bytes(block_tokens_[b]);
  for (auto& w : workers_) result_.unfinished.push_back(codec_.bytes(block_tokens_[w.cur]));
  return result_;
}

// A token sampled in the forward that ended the run, after the row whose answer ended it: counted
// and reported (on_token) as generated, but neither fed nor scanned for a step end.
void Session::count_unfed(int w, int32_t token) {
  WorkerState& ws = workers_[w];
  ws.generated += 1;
  result_.tokens_per_worker[w] += 1;
  total_generated_ += 1;
  TokenEvent ev{w, ws.step, serial_, token, codec_.token_bytes(token),
                is_eos(token) && !forbidden_[token]};
  if (obs_) obs_->on_token(ev);
}

// Greedy finisher over a temporary block; leaves the run's cache as it was (session.h).
FinisherResult Session::run_finisher(int64_t serial_step, bool snapshot) {
  FinisherResult res;
  res.serial_step = serial_step;
  const int64_t vocab = be_.config().vocab_size;
  LayoutState st = layout_state();  // closing steps (last token not fed yet) read as history
  BlockId f = be_.new_block();
  std::vector<int32_t> feed = codec_.encode(fmt_.finisher.suffix);
  std::vector<float> logits;
  int64_t produced = 0;
  while (!feed.empty()) {
    ForwardBatch batch;
    std::vector<FedToken> fed;
    batch.views.push_back(finisher_view(st, f));
    for (size_t j = 0; j < feed.size(); ++j) {
      batch.tokens.push_back({feed[j], 0, f, j + 1 == feed.size()});
      fed.push_back({feed[j], -1, 0, f, 0, FeedRole::finisher});
    }
    forward(batch, fed, logits);
    if (obs_) {
      ForwardRecord rec{serial_step, batch.views, fed, {}, {-1}, &logits, ForwardKind::finisher,
                        {}, snapshot};
      obs_->on_finisher_forward(rec);
    }
    const float* row = logits.data() + (logits.size() - vocab);
    int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    if (is_eos(best)) break;
    res.continuation += codec_.token_bytes(best);
    if (++produced >= fmt_.finisher.max_tokens) break;
    if (finisher_done(res.continuation, fmt_.answer.kind)) break;
    feed = {best};
  }
  be_.free_block(f);
  block_tokens_[f].clear();
  res.answer = finish_answer(res.continuation, fmt_.answer.kind);
  return res;
}

}  // namespace hogwild
