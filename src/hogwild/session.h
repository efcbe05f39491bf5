// A Hogwild! session (docs/DESIGN.md §2–§4; paper arXiv 2504.06261 §3): n_workers instances of one
// model reason together over one shared KV cache, one batched forward per serial step.
//
// Life of a run (session.cpp):
//   prefill   ONE forward: the prompt (+ layout.history_header) into the history block, and every
//             constant layout text (others' header, separator, separator + own header) into its own
//             block, written by a pseudo-writer whose view is [history][that block] (layout.h).
//   serial    ONE forward per serial step: every active worker feeds its pending tokens (1 while
//   steps     decoding; after a step ended: the step's last token + the next step's prefix, and the
//             collaboration-check question when due). No padding. Each worker samples from the
//             logits of its last fed token.
//   steps     A step ends by steps.h find_step_end on the step's token bytes. Its block becomes a
//             "closing" block: in the next forward it is read as the tail of the history (finishing
//             order, ties by worker index) while its last token is fed into it, and right after
//             that forward it is appended to the history block (Backend::append_block: keys rotated
//             once, no forward). So the KV history reads exactly like the text history: every step
//             followed by its separator, which is inside the step's last token.
//             contiguous layout: nothing moves; the next prefix follows in the same block.
//   stopping  a finished step with a final answer (answer.h step_answer) ends the run for all;
//             EOS (only when not forbidden) stops that worker, the others go on; the budget
//             (serial steps after the prefill) or max_context ends the run with the finisher;
//             an interrupt flag ends it without the finisher.
//   finisher  temporary block after finisher_view (layout.h): prompt, history, every unfinished
//   step
//             + separator, the formatting's finisher suffix; greedy decoding for at most
//             finisher.max_tokens, then the block is freed. The cache of the run is not touched, so
//             it also serves snapshots at intermediate budgets.
//
// Tokens that were sampled but not yet fed when the finisher runs (the last round's) are not part
// of the finisher's text.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"
#include "model/backend.h"

namespace hogwild {

/// Chooses a worker's next token from its logits. Forbidden tokens already have -inf logits.
class TokenPicker {
 public:
  virtual ~TokenPicker() = default;
  /// logits: (vocab_size) fp32, may be modified. Returns a vocabulary id.
  virtual int32_t pick(int worker, std::vector<float>& logits) = 0;
  /// Device sampling (Backend::forward_sample): describes worker's next pick as a RowSampling
  /// (drawing its uniform now) and returns true, or returns false when the pick needs the host
  /// logits (then pick() is called). After true, the caller reports the drawn token to picked().
  virtual bool device_row(int /*worker*/, RowSampling& /*out*/) { return false; }
  virtual void picked(int /*worker*/, int32_t /*token*/) {}
};

struct SessionOptions {
  int n_workers = 2;  // 1..formatting.worker_names.size()
  Layout layout = Layout::combined;
  int64_t budget = 0;                 // serial steps (forwards after the prefill); 0 = unlimited
  std::vector<int64_t> snapshots;     // serial-step counts at which the finisher runs on the state
  int64_t collab_every = -1;          // generated tokens between checks; -1 = formatting's; 0 = off
  int64_t max_context = 0;            // max tokens in any view; 0 = config max_position_embeddings
  int64_t max_tokens_per_worker = 0;  // generated tokens per worker; 0 = unlimited
  bool stop_on_answer = true;         // false: run to the budget even when a step holds an answer
  std::vector<int32_t> extra_eos;     // EOS ids besides the codec's and the model config's
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT) to stop after this step
  // Sample on the device when the backend can and the picker describes every row of a forward
  // (TokenPicker::device_row); ForwardRecord::logits is then null for those forwards.
  bool device_sampling = false;
  // With device sampling, also fetch each forward's logits rows to the host (for dumps such as
  // `run --dump-logits`): ForwardRecord::logits is then never null. Costs one copy per forward.
  bool keep_logits = false;
};

/// Where a fed token came from.
enum class FeedRole { prompt, constant, step_start, generated, finisher };

/// What a forward was for: the prefill (serial step 0), a serial step, or one of the finisher's
/// forwards (SessionObserver::on_finisher_forward; final or snapshot).
enum class ForwardKind { prefill, step, finisher };

/// One token fed in a forward (for observers, --dump-views and the reference test).
struct FedToken {
  int32_t token = 0;
  int worker = -1;     // writer worker; -1 for prefill (prompt and constant blocks)
  int step = 0;        // the worker's 1-based step the token belongs to; 0 in prefill
  BlockId block = -1;  // target block
  int64_t index = 0;   // block-local index written
  FeedRole role = FeedRole::generated;
};

/// One forward as the session ran it.
struct ForwardRecord {
  int64_t serial_step = 0;                  // 0 = prefill; finisher: the budget it ran at
  std::vector<std::vector<BlockId>> views;  // as passed to the backend (prefill: pseudo-writers)
  std::vector<FedToken> tokens;             // batch order
  std::vector<std::pair<int, int>> closed;  // (worker, step) promoted after this forward, in order
  std::vector<int> logit_workers;           // worker of each logits row (prefill: -1)
  const std::vector<float>* logits = nullptr;  // (logit_workers.size(), vocab_size); null when
                                               // the forward sampled on the device
  ForwardKind kind = ForwardKind::step;
  std::vector<BlockId> promoted;  // blocks of `closed`, in order, appended to the history block
                                  // right after this forward (their ids may be reused later)
  bool snapshot = false;          // finisher forwards: of a snapshot (else the final finisher)
};

/// A sampled token, for streaming.
struct TokenEvent {
  int worker = 0;
  int step = 0;             // worker's 1-based step
  int64_t serial_step = 0;  // forward whose logits gave it
  int32_t token = 0;
  std::string bytes;  // raw token bytes (TextCodec::token_bytes)
  bool eos = false;   // the worker stopped on it (not fed)
};

/// Result of a finisher run (final or snapshot).
struct FinisherResult {
  int64_t serial_step = 0;   // budget at which it ran
  std::string continuation;  // greedy bytes after the suffix
  std::optional<std::string> answer;
  bool reached = true;  // false: the run ended before this budget (answer = final)
};

/// Observer of a session; every callback runs on the session's thread.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void on_forward(const ForwardRecord&) {}
  /// A new step started: its text opening (prefix and maybe the collaboration question).
  virtual void on_step_start(int worker, int step, const std::string& bytes, bool collab_check) {}
  virtual void on_token(const TokenEvent&) {}
  /// A step ended (text = its bytes, prefix included); answer when it holds a final answer.
  virtual void on_step_end(int worker, int step, const std::string& text,
                           const std::optional<std::string>& answer) {}
  virtual void on_snapshot(const FinisherResult&) {}
  /// One forward of the finisher (kind finisher; serial_step = the budget it runs at): the
  /// suffix, then one greedy token per forward. Its block is freed when the finisher ends.
  virtual void on_finisher_forward(const ForwardRecord&) {}
};

struct SessionResult {
  std::optional<std::string> answer;
  std::string stop_reason;   // "answer" "budget" "eos" "max_context" "max_tokens" "interrupted"
  int answer_worker = -1;    // worker whose step held the answer (-1: finisher / none)
  int64_t serial_steps = 0;  // forwards after the prefill
  int64_t prompt_tokens = 0;
  std::vector<int64_t> tokens_per_worker;  // generated (sampled) tokens
  double prefill_seconds = 0, decode_seconds = 0, finisher_seconds = 0;
  // Of decode_seconds, the time inside the backend's forwards (Backend::forward / forward_sample:
  // planning, uploads, the model, sampling on the device); the rest is the session's host work
  // (scheduling, step ends, promotions, observers such as the live view).
  double decode_forward_seconds = 0;
  std::optional<FinisherResult> finisher;  // when the finisher gave the answer
  std::vector<FinisherResult> snapshots;   // one per SessionOptions::snapshots entry, sorted
  std::string history_text;             // bytes of the history: prompt + finished steps (the last
                                        // round's finished steps without their unfed last token)
  std::vector<std::string> unfinished;  // bytes of each worker's unfinished step (contiguous: all)
};

class Session {
 public:
  /// prompt: token ids of the full prompt (chat template applied; see prompt.h). Throws
  /// hogwild::Error for bad options (worker count, empty prompt, prompt longer than max_context).
  /// PRECONDITION: backend, codec, formatting, picker outlive the session; the backend's cache is
  /// used only by this session while it runs.
  Session(Backend& backend, const TextCodec& codec, const Formatting& formatting,
          SessionOptions options, TokenPicker& picker);
  ~Session() = default;

  void set_observer(SessionObserver* obs) { obs_ = obs; }
  /// Runs to the end. Callable once.
  SessionResult run(const std::vector<int32_t>& prompt);

  /// The vocabulary mask used during collaborative reasoning: 1 = forbidden (vocab_size).
  const std::vector<uint8_t>& forbidden() const { return forbidden_; }
  /// Token ids held by block b as the session fed them (for dumps and tests).
  const std::vector<int32_t>& block_tokens(BlockId b) const;
  /// The history block (prompt + finished steps) and the constant layout blocks (after run()
  /// started), for dumps.
  BlockId history_block() const { return history_; }
  const ConstBlocks& const_blocks() const { return consts_; }
  /// Ids that end a worker's generation (stop_policy.h eos_id_union of the tokenizer's, the model
  /// config's and SessionOptions::extra_eos), and the ids forbidden during reasoning, ascending.
  const std::vector<int32_t>& eos_ids() const { return eos_; }
  const std::vector<int32_t>& forbidden_ids() const { return forbidden_ids_; }

 private:
  struct Feed {
    int32_t token;
    BlockId block;
    int step;
    FeedRole role;
  };
  struct WorkerState {
    BlockId cur = -1;        // current step block (contiguous: whole output)
    int step = 0;            // 1-based number of the current step
    std::string step_bytes;  // bytes of the current step so far (prefix included)
    std::vector<Feed> feed;  // tokens to feed in the next forward
    bool active = true;
    int64_t generated = 0;
  };

  void build_forbidden();
  BlockId const_block(const std::string& text);
  void prefill(const std::vector<int32_t>& prompt, std::vector<float>& logits);
  void start_step(int w, bool first);
  // Handles worker w's sampled token; returns true when the run must stop (answer found).
  bool on_sampled(int w, int32_t token);
  LayoutState layout_state() const;
  void forward(ForwardBatch& batch, std::vector<FedToken>& fed, std::vector<float>& logits,
               const std::vector<RowSampling>* device_rows = nullptr,
               std::vector<int32_t>* drawn = nullptr);
  FinisherResult run_finisher(int64_t serial_step, bool snapshot);
  void count_unfed(int w, int32_t token);
  int32_t sample(int w, const float* row);
  bool is_eos(int32_t token) const;

  Backend& be_;
  const TextCodec& codec_;
  const Formatting& fmt_;
  SessionOptions opt_;
  TokenPicker& picker_;
  SessionObserver* obs_ = nullptr;
  std::vector<uint8_t> forbidden_;
  std::vector<int32_t> forbidden_ids_;  // the ids forbidden_ marks (device sampling bans them)
  std::vector<int32_t> eos_;
  bool ran_ = false;

  BlockId history_ = -1;
  ConstBlocks consts_;
  std::vector<std::pair<std::string, BlockId>> const_texts_;  // distinct constant texts
  std::vector<BlockId> closing_;
  std::vector<std::pair<int, int>> closing_steps_;  // (worker, step) of closing_
  std::vector<WorkerState> workers_;
  std::vector<std::vector<int32_t>> block_tokens_;  // by BlockId
  int64_t serial_ = 0;
  int64_t total_generated_ = 0;
  bool collab_due_ = false;
  int64_t collab_every_ = 0;
  int64_t max_context_ = 0;
  SessionResult result_;
};

}  // namespace hogwild
